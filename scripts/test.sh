#!/bin/sh
# Installs what kretry needs (Debian 12), builds with -Werror and runs every
# test suite. KRETRY_SANITIZER=address,undefined builds the sanitized variant
# in KRETRY_BUILD_DIR (default build).
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --test
dir="${KRETRY_BUILD_DIR:-build}"
cmake -S . -B "$dir" -DKRETRY_WERROR=ON -DKRETRY_SANITIZER="${KRETRY_SANITIZER:-}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
cd "$dir"
# Twice as many suites as cores: the integration suites mostly wait (group
# joins, tier delays, timeouts on the mock cluster), not compute.
ctest --output-on-failure -j"$(($(nproc) * 2))" --timeout 600
