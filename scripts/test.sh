#!/bin/sh
# Installs what kretry needs (Debian 12), builds with -Werror and runs every
# test suite: first on librdkafka's mock cluster, then the integration and
# black-box suites a second time on real Apache Kafka (one KRaft node from
# scripts/kafka.sh, with a SCRAM listener beside), a third time under the
# consumer group protocol (KIP-848), the suites labelled secure on a
# secured node (TLS, SASL, mTLS, ACLs) with kretry as a service user, then
# the fault suite on a three-node cluster under both protocols.
#
#   KRETRY_SANITIZER=address,undefined  build the sanitized variant
#   KRETRY_BUILD_DIR=DIR                build there (default build)
#   KRETRY_REAL_KAFKA=0                 the mock pass only (no Java)
#
# The real clusters listen on 127.0.0.1:19092 (one node), :19292 and :19342
# (the secured node: SASL_SSL and mTLS) and :19192-19197 (three), so that a Kafka of the user's own on 9092 is left alone, and
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
# Under the sanitizers, not the tests labelled nosanitizer: they drive
# librdkafka code the sanitizer stops on (tests/cli.cmake says which).
ctest --output-on-failure -j"$jobs" --timeout 600 \
        -LE "kafka3|secure-only${KRETRY_SANITIZER:+|nosanitizer}" || rc=$?
keep_log mock
[ "$rc" = 0 ] || exit "$rc"
[ "$real" = 1 ] || exit 0

kafka() { "$top/scripts/kafka.sh" "$@"; }
stop_clusters() {
        KRETRY_KAFKA_DIR="$PWD/kafka-1" kafka stop 2>/dev/null || true
        KRETRY_KAFKA_DIR="$PWD/kafka-3" kafka stop 2>/dev/null || true
        KRETRY_KAFKA_DIR="$PWD/kafka-sec" kafka stop 2>/dev/null || true
}
trap stop_clusters EXIT INT TERM

echo "== real Apache Kafka, one node: integration and black-box suites"
export KRETRY_KAFKA_DIR="$PWD/kafka-1" KRETRY_KAFKA_PORT=19092
b=$(kafka start --scram)
export KRETRY_TEST_SCRAM_BOOTSTRAP="$(kafka scram-bootstrap)"
KRETRY_TEST_BOOTSTRAP="$b" ctest --output-on-failure -j"$jobs" --timeout 600 \
        -L 'integration|blackbox|real' -LE secure-only || rc=$?
keep_log real
[ "$rc" = 0 ] || exit "$rc"

# The suites whose consumers join a group, again under the consumer group
# protocol of KIP-848 (group.protocol=consumer): the same promises must
# hold under both.
echo "== real Apache Kafka, one node, group.protocol=consumer"
KRETRY_TEST_GROUP_PROTOCOL=consumer KRETRY_TEST_BOOTSTRAP="$b" \
        ctest --output-on-failure -j"$jobs" --timeout 600 \
        -L 'integration|blackbox|real' -LE 'nogroup|secure-only' || rc=$?
keep_log real-consumer
kafka stop
[ "$rc" = 0 ] || exit "$rc"

# A secured node (scripts/kafka.sh start --secure): the test's own clients
# log in as admin (PLAIN: Debian's kcat cannot log in with SCRAM to Kafka
# 4), kretry as svc with SCRAM-SHA-512 and, in blackbox_mtls, as svc-mtls
# with a client certificate. Every topic and group of the pass starts with
# sec- (KRETRY_TEST_NAME_PREFIX), kretry's transactional ids with
# kretry.sec-: the service users get exactly those prefixes, no more.
# Applying a topology creates and alters topics: that test runs as admin.
echo "== real Apache Kafka, secured: TLS, SASL, mTLS, ACLs; kretry as svc"
export KRETRY_KAFKA_DIR="$PWD/kafka-sec" KRETRY_KAFKA_PORT=19292
b=$(kafka start --secure)
props="$KRETRY_KAFKA_DIR/clients"
mkdir -p "$props"
kafka secure-props admin plain >"$props/admin-plain.properties"
kafka secure-props admin >"$props/admin.properties"
kafka secure-props svc >"$props/svc.properties"
kafka secure-props svc-mtls mtls >"$props/svc-mtls.properties"
for user in svc svc-mtls; do
        kafka acl "$user" Read Write Describe DescribeConfigs -- 'topic:sec-*'
        kafka acl "$user" Read -- 'group:sec-*'
        # The DLQ commands' reader (dlq inspect, export, kretry ui) names
        # this group and never joins it: it only looks up its coordinator.
        kafka acl "$user" Describe -- 'group:kretry-dlq-reader'
        kafka acl "$user" Write Describe -- 'transactional-id:kretry.sec-*'
done
export KRETRY_TEST_NAME_PREFIX=sec- KRETRY_TEST_BOOTSTRAP="$b" \
        KRETRY_TEST_KAFKA_PROPS="$props/admin-plain.properties" \
        KRETRY_TEST_MTLS_BOOTSTRAP="$(kafka mtls-bootstrap)" \
        KRETRY_TEST_MTLS_PROPS="$props/svc-mtls.properties"
KRETRY_TEST_SERVICE_PROPS="$props/svc.properties" \
        ctest --output-on-failure -j"$jobs" --timeout 600 -L '^secure$' || rc=$?
keep_log secure
if [ "$rc" = 0 ]; then
        KRETRY_TEST_SERVICE_PROPS="$props/admin.properties" \
                ctest --output-on-failure --timeout 600 -L secure-admin || rc=$?
        keep_log secure-admin
fi
unset KRETRY_TEST_NAME_PREFIX KRETRY_TEST_BOOTSTRAP KRETRY_TEST_KAFKA_PROPS \
        KRETRY_TEST_MTLS_BOOTSTRAP KRETRY_TEST_MTLS_PROPS
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
