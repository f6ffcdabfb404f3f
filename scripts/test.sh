#!/bin/sh
# Installs what kretry needs (Debian 12), builds with -Werror and runs every
# test suite: first on librdkafka's mock cluster, then the integration and
# black-box suites a second time on real Apache Kafka (one KRaft node from
# scripts/kafka.sh, with a SCRAM listener beside), a third time under the
# consumer group protocol (KIP-848), then the fault suite on a three-node
# cluster under both protocols.
#
#   KRETRY_SANITIZER=address,undefined  build the sanitized variant
#   KRETRY_BUILD_DIR=DIR                build there (default build)
#   KRETRY_REAL_KAFKA=0                 the mock pass only (no Java)
#
# The real clusters listen on 127.0.0.1:19092 (one node) and :19192-19197
# (three), so that a Kafka of the user's own on 9092 is left alone, and
# below Linux's ephemeral range (32768-60999), so that no client
# connection of an earlier suite can hold a port a node must bind; their
# data lives in the build directory and is removed when the pass ends.
set -eu
cd "$(dirname "$0")/.."
real="${KRETRY_REAL_KAFKA:-1}"
if [ "$real" = 1 ]; then
        ./scripts/install-deps.sh --test --kafka
else
        ./scripts/install-deps.sh --test
fi
dir="${KRETRY_BUILD_DIR:-build}"
cmake -S . -B "$dir" -DKRETRY_RDKAFKA_PREFIX="$(./scripts/librdkafka.sh prefix)" -DKRETRY_WERROR=ON -DKRETRY_SANITIZER="${KRETRY_SANITIZER:-}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
top=$(pwd)
cd "$dir"
# Twice as many suites as cores: the integration suites mostly wait (group
# joins, tier delays, timeouts), not compute.
jobs=$(($(nproc) * 2))
keep_log() { cp Testing/Temporary/LastTest.log "Testing/Temporary/LastTest-$1.log"; }

echo "== mock cluster: every suite"
rc=0
ctest --output-on-failure -j"$jobs" --timeout 600 -LE kafka3 || rc=$?
keep_log mock
[ "$rc" = 0 ] || exit "$rc"
[ "$real" = 1 ] || exit 0

kafka() { "$top/scripts/kafka.sh" "$@"; }
stop_clusters() {
        KRETRY_KAFKA_DIR="$PWD/kafka-1" kafka stop 2>/dev/null || true
        KRETRY_KAFKA_DIR="$PWD/kafka-3" kafka stop 2>/dev/null || true
}
trap stop_clusters EXIT INT TERM

echo "== real Apache Kafka, one node: integration and black-box suites"
export KRETRY_KAFKA_DIR="$PWD/kafka-1" KRETRY_KAFKA_PORT=19092
b=$(kafka start --scram)
export KRETRY_TEST_SCRAM_BOOTSTRAP="$(kafka scram-bootstrap)"
KRETRY_TEST_BOOTSTRAP="$b" ctest --output-on-failure -j"$jobs" --timeout 600 \
        -L 'integration|blackbox|real' || rc=$?
keep_log real
[ "$rc" = 0 ] || exit "$rc"

# The suites whose consumers join a group, again under the consumer group
# protocol of KIP-848 (group.protocol=consumer): the same promises must
# hold under both.
echo "== real Apache Kafka, one node, group.protocol=consumer"
KRETRY_TEST_GROUP_PROTOCOL=consumer KRETRY_TEST_BOOTSTRAP="$b" \
        ctest --output-on-failure -j"$jobs" --timeout 600 \
        -L 'integration|blackbox|real' -LE nogroup || rc=$?
keep_log real-consumer
kafka stop
[ "$rc" = 0 ] || exit "$rc"

echo "== real Apache Kafka, three nodes: broker faults, under both group protocols"
export KRETRY_KAFKA_DIR="$PWD/kafka-3" KRETRY_KAFKA_PORT=19192
b=$(kafka start --nodes 3)
KRETRY_TEST_KAFKA3="$b" ctest --output-on-failure --timeout 900 -L kafka3 || rc=$?
keep_log kafka3
if [ "$rc" = 0 ]; then
        KRETRY_TEST_GROUP_PROTOCOL=consumer KRETRY_TEST_KAFKA3="$b" \
                ctest --output-on-failure --timeout 900 -L kafka3 || rc=$?
        keep_log kafka3-consumer
fi
kafka stop
exit "$rc"
