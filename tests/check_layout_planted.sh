#!/bin/sh
# The layout check against a planted upward include: a copy of the rooms
# in which the engine's shape.c includes the topology's topology.h. The
# check must fail there and name the line (tests/layout.cmake).
set -eu
src="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp -R "$src/adapter" "$src/schemas" "$src/topology" "$dir"
echo '#include "topology.h"' >>"$dir/adapter/src/shape.c"
sh "$src/scripts/check-layout.sh" "$dir"
