#!/bin/sh
# Renders docs/properties.md from the property table in adapter/src/conf.c
# (test_conf fails when the two differ). Builds in $KRETRY_BUILD_DIR
# (default build).
set -eu
cd "$(dirname "$0")/.."
dir="${KRETRY_BUILD_DIR:-build}"
cmake -S . -B "$dir" >/dev/null
cmake --build "$dir" --target gen_properties >/dev/null
"$dir/tests/gen_properties" >docs/properties.md
echo "docs/properties.md written"
