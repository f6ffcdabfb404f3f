#!/bin/sh
# The layout check against a planted upward include: a copy of the rooms
# in which the engine's shape.c includes the topology's topology.h, or,
# with "engine", in which the partition table (a service, part.c) includes
# route.h of a phase above it. The check must fail there and name the line
# (tests/layout.cmake).
set -eu
src="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp -R "$src/adapter" "$src/schemas" "$src/topology" "$dir"
if [ "${2:-}" = engine ]; then
        echo '#include "route.h"' >>"$dir/adapter/src/part.c"
else
        echo '#include "topology.h"' >>"$dir/adapter/src/shape.c"
fi
sh "$src/scripts/check-layout.sh" "$dir"
