#!/bin/sh
# The layout check against a planted upward arrow: a copy of the rooms in
# which the engine's shape.c includes the topology's topology.h, or, with
# "engine", in which the partition table (a service, part.c) includes
# route.h of a phase above it. With "calls" or "circle" and the build
# directory, a copy of the engine's objects in which part.c's object calls
# kretry_dispatch of route.c (a service calling a phase), or restore.c's
# calls kretry_drain_and_commit of drain.c (restore -> drain -> txn ->
# restore: a circle of three files). The check must fail there and name the
# line, the arrow or the circle (tests/layout.cmake).
set -eu
src="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp -R "$src/adapter" "$src/schemas" "$src/topology" "$dir"
objs=CMakeFiles/kretry_obj.dir/adapter/src
case "${2:-}" in
engine)
        echo '#include "route.h"' >>"$dir/adapter/src/part.c"
        ;;
calls | circle)
        mkdir -p "$dir/build/$objs"
        cp "$3/$objs"/*.c.o "$dir/build/$objs"
        if [ "$2" = calls ]; then
                into=part called=kretry_dispatch
        else
                into=restore called=kretry_drain_and_commit
        fi
        printf 'void %s(void);\nvoid kretry_planted(void) { %s(); }\n' \
                "$called" "$called" >"$dir/planted.c"
        cc -c -o "$dir/planted.o" "$dir/planted.c"
        ld -r -o "$dir/merged.o" "$dir/build/$objs/$into.c.o" "$dir/planted.o"
        mv "$dir/merged.o" "$dir/build/$objs/$into.c.o"
        ;;
*)
        echo '#include "topology.h"' >>"$dir/adapter/src/shape.c"
        ;;
esac
sh "$src/scripts/check-layout.sh" "$dir" "$dir/build"
