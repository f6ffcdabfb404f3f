#!/bin/sh
# Installs what kretry needs (Debian 12), builds it and runs `kretry demo`.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -DKRETRY_RDKAFKA_PREFIX="$(./scripts/librdkafka.sh prefix)" \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target kretry_cli
./build/kretry demo
