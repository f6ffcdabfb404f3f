#!/bin/sh
# Real Apache Kafka on this machine, no Docker: the broker's jars from Maven
# Central, one KRaft node (broker and controller in one JVM) or three, on
# 127.0.0.1. For kretry's real-Kafka test pass, its fault tests and its
# bench; `kretry dev-broker` stays the zero-install broker for the demo.
#
#   scripts/kafka.sh fetch              jars into the cache (first time: ~1 min)
#   scripts/kafka.sh start [--nodes 3] [--scram]
#                                       start, wait until it answers, print the
#                                       bootstrap address (127.0.0.1:9092);
#                                       --scram: every node also listens with
#                                       SASL_PLAINTEXT, SCRAM-SHA-256 and -512,
#                                       user kretry, password kretry-secret
#   scripts/kafka.sh start --secure [--nodes 3]
#                                       a secured cluster instead (no anonymous
#                                       listener): a CA and certificates made
#                                       with openssl in KRETRY_KAFKA_DIR/tls,
#                                       SASL_SSL on the client port (SCRAM-SHA-512
#                                       and PLAIN), SSL with client certificates
#                                       (mTLS, principal User:<CN>) on PORT+50,
#                                       the controller over mTLS too, ACLs with
#                                       allow.everyone.if.no.acl.found=false;
#                                       users admin (super user), svc, operator,
#                                       ui, each with password NAME-secret; the
#                                       brokers talk as User:kafka-broker (super
#                                       user) with their own certificate.
#                                       Prints the SASL_SSL bootstrap; stderr
#                                       says where the client properties are
#   scripts/kafka.sh secure-props USER [scram|plain|mtls]
#                                       the librdkafka properties USER logs in
#                                       with, one key=value a line (default
#                                       scram; mtls: a client certificate with
#                                       CN=USER, made on first use, e.g. svc-mtls)
#   scripts/kafka.sh mtls-bootstrap     print the mTLS listener's bootstrap
#   scripts/kafka.sh acl USER OP... -- RESOURCE...
#                                       as admin, allow User:USER each OP
#                                       (Read, Write, Describe, DescribeConfigs,
#                                       IdempotentWrite, All, ...) on each
#                                       RESOURCE: topic:NAME, topic:PREFIX*,
#                                       group:..., transactional-id:...,
#                                       cluster (a trailing * makes a prefixed
#                                       ACL); needs python3-kafka
#   scripts/kafka.sh scram-bootstrap    print that listener's bootstrap address
#   scripts/kafka.sh status             which nodes run, and the bootstrap
#   scripts/kafka.sh kill N             SIGKILL node N's JVM (1-based)
#   scripts/kafka.sh stop [N]           SIGTERM node N (controlled shutdown),
#                                       or every node and drop the data
#   scripts/kafka.sh restart N          start node N again on its data
#   scripts/kafka.sh bootstrap          print the bootstrap address
#
# Environment:
#   KRETRY_KAFKA_VERSION  broker version (default below; docker-compose.yml
#                         pins the same one)
#   KRETRY_KAFKA_CACHE    where the jars go (default ~/.cache/kretry)
#   KRETRY_KAFKA_DIR      this cluster's configuration, data, logs and PIDs
#                         (default $TMPDIR/kretry-kafka-$UID); two clusters
#                         need two folders and two ports
#   KRETRY_KAFKA_PORT     node 1's client port (default 9092); node N listens
#                         for clients on PORT+2(N-1), its controller on one more,
#                         with --scram for SCRAM clients on PORT+50+2(N-1),
#                         with --secure for mTLS clients there
#   KRETRY_KAFKA_HEAP     JVM heap a node (default 512m)
#
# Every process it starts is recorded by PID in KRETRY_KAFKA_DIR and stopped
# by that PID, never by name.
set -eu

version="${KRETRY_KAFKA_VERSION:-4.1.1}"
log4j_version=2.24.3
cache="${KRETRY_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kretry}"
libs="$cache/kafka-$version/libs"
dir="${KRETRY_KAFKA_DIR:-${TMPDIR:-/tmp}/kretry-kafka-$(id -u)}"
port="${KRETRY_KAFKA_PORT:-9092}"
heap="${KRETRY_KAFKA_HEAP:-512m}"

die() {
        echo "kafka.sh: $*" >&2
        exit 1
}

usage() {
        sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
}

# fetch: a small pom naming the broker and a log4j2 binding (Kafka 4 logs
# through log4j2 and its pom brings no binding; slf4j 1.7, so the slf4j 1
# binding), resolved by Maven and copied into one folder: the classpath.
fetch() {
        [ -f "$libs/.complete" ] && return 0
        command -v mvn >/dev/null || die "mvn is missing (scripts/install-deps.sh --kafka)"
        command -v java >/dev/null || die "java is missing (scripts/install-deps.sh --kafka)"
        work="$cache/kafka-$version"
        mkdir -p "$work"
        cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kretry.test</groupId>
  <artifactId>kafka-broker</artifactId>
  <version>$version</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$version</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>$log4j_version</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>$log4j_version</version>
    </dependency>
  </dependencies>
</project>
EOF
        echo "kafka.sh: fetching Apache Kafka $version from Maven Central into $libs" >&2
        rm -rf "$libs"
        mvn -q -B -f "$work/pom.xml" dependency:copy-dependencies \
                -DincludeScope=runtime -DoutputDirectory="$libs" >"$work/mvn.log" 2>&1 ||
                { cat "$work/mvn.log" >&2; die "mvn could not fetch kafka_2.13 $version"; }
        touch "$libs/.complete"
}

client_port() { echo $((port + 2 * ($1 - 1))); }
controller_port() { echo $((port + 2 * ($1 - 1) + 1)); }
scram_port() { echo $((port + 50 + 2 * ($1 - 1))); }
scram() { [ -f "$dir/scram" ]; }
mtls_port() { echo $((port + 50 + 2 * ($1 - 1))); }
secure() { [ -f "$dir/secure" ]; }
# The secured cluster's users (SASL: SCRAM-SHA-512 and PLAIN), each with
# the password NAME-secret; admin is a super user, the others get only what
# ACLs grant them. The brokers' own certificate names User:kafka-broker.
SECURE_USERS="admin svc operator ui"
BROKER_CN=kafka-broker
# The SCRAM listener's user, made when a node's storage is formatted.
SCRAM_USER=kretry
SCRAM_PASSWORD=kretry-secret
nodes() { cat "$dir/nodes" 2>/dev/null || echo 0; }

bootstrap() {
        n=$(nodes)
        [ "$n" -gt 0 ] || die "no cluster in $dir (scripts/kafka.sh start)"
        b=""
        for i in $(seq "$n"); do
                b="$b${b:+,}127.0.0.1:$(client_port "$i")"
        done
        echo "$b"
}

mtls_bootstrap() {
        secure || die "the cluster in $dir is not secured (scripts/kafka.sh start --secure)"
        b=""
        for i in $(seq "$(nodes)"); do
                b="$b${b:+,}127.0.0.1:$(mtls_port "$i")"
        done
        echo "$b"
}

# cert NAME [server]: a key and a certificate with CN=NAME signed by the
# cluster's CA, for 127.0.0.1 and localhost (server: a broker's, which also
# connects to its peers as a client). Written under a temporary name and
# renamed, so that a reader never sees half a file.
cert() {
        name=$1
        usage=clientAuth
        [ "${2:-}" = server ] && usage=serverAuth,clientAuth
        t="$dir/tls/.$name.$$"
        printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=digitalSignature,keyEncipherment" \
                "extendedKeyUsage=$usage" "subjectAltName=IP:127.0.0.1,DNS:localhost" >"$t.ext"
        openssl req -new -newkey rsa:2048 -nodes -keyout "$t.key" -out "$t.csr" \
                -subj "/CN=$name" 2>/dev/null || die "openssl could not make a key for $name"
        openssl x509 -req -in "$t.csr" -CA "$dir/tls/ca.pem" -CAkey "$dir/tls/ca.key" \
                -set_serial "0x$(od -An -tx8 -N8 /dev/urandom | tr -d ' \n')" -days 30 \
                -extfile "$t.ext" -out "$t.pem" 2>/dev/null || die "openssl could not sign $name"
        chmod 600 "$t.key"
        mv "$t.key" "$dir/tls/$name.key"
        mv "$t.pem" "$dir/tls/$name.pem"
        rm -f "$t.csr" "$t.ext"
}

# The CA and the brokers' certificate (one for every node: the same
# principal), and the brokers' PEM key store: key, then the chain.
make_tls() {
        [ -f "$dir/tls/ca.pem" ] && return 0
        command -v openssl >/dev/null || die "openssl is missing"
        mkdir -p "$dir/tls"
        chmod 700 "$dir/tls"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/tls/ca.key" \
                -out "$dir/tls/ca.pem" -days 30 -subj "/CN=kretry test CA" 2>/dev/null ||
                die "openssl could not make the CA"
        cert "$BROKER_CN" server
        cat "$dir/tls/$BROKER_CN.key" "$dir/tls/$BROKER_CN.pem" "$dir/tls/ca.pem" \
                >"$dir/tls/$BROKER_CN.keystore.pem"
}

# secure-props USER [scram|plain|mtls]: what librdkafka needs to log in.
secure_props() {
        secure || die "the cluster in $dir is not secured (scripts/kafka.sh start --secure)"
        user="${1:-}"
        how="${2:-scram}"
        [ -n "$user" ] || die "secure-props: which user?"
        case "$how" in
        scram | plain)
                case " $SECURE_USERS " in
                *" $user "*) ;;
                *) die "secure-props: no SASL user $user (users: $SECURE_USERS)" ;;
                esac
                mech=SCRAM-SHA-512
                [ "$how" = plain ] && mech=PLAIN
                printf '%s\n' security.protocol=SASL_SSL "sasl.mechanism=$mech" \
                        "sasl.username=$user" "sasl.password=$user-secret" \
                        "ssl.ca.location=$dir/tls/ca.pem"
                ;;
        mtls)
                case "$user" in
                *[!A-Za-z0-9._-]* | "$BROKER_CN") die "secure-props: not a client name: $user" ;;
                esac
                [ -f "$dir/tls/$user.pem" ] || cert "$user"
                printf '%s\n' security.protocol=SSL "ssl.ca.location=$dir/tls/ca.pem" \
                        "ssl.certificate.location=$dir/tls/$user.pem" \
                        "ssl.key.location=$dir/tls/$user.key"
                ;;
        *) die "secure-props: scram, plain or mtls, not $how" ;;
        esac
}

# acl USER OP... -- RESOURCE...: grants as admin, through kafka-python's
# admin client (the broker jars hold no ACL tool).
acl() {
        secure || die "the cluster in $dir is not secured (scripts/kafka.sh start --secure)"
        secure_props admin >"$dir/tls/.admin.properties.$$"
        rc=0
        /usr/bin/python3 "$(dirname "$0")/kafka-acl.py" "$(bootstrap)" \
                "$dir/tls/.admin.properties.$$" "$@" || rc=$?
        rm -f "$dir/tls/.admin.properties.$$"
        return "$rc"
}

scram_bootstrap() {
        scram || die "the cluster in $dir has no SCRAM listener (scripts/kafka.sh start --scram)"
        b=""
        for i in $(seq "$(nodes)"); do
                b="$b${b:+,}127.0.0.1:$(scram_port "$i")"
        done
        echo "$b"
}

# A test cluster: internal topics as replicated as the cluster allows, a
# group's first join not held back, consumer sessions from 1 s (a stock
# broker refuses below 6 s: the kill tests use 3 s to find a dead member
# sooner); under the consumer group protocol (KIP-848), where the broker
# sets them, sessions of 6 s and heartbeats every 500 ms, as the suites'
# classic consumers ask for (a stock broker: 45 s and 5 s), short broker
# session timeouts so a killed node is fenced within
# seconds, messages up to 8 MiB (the suites send a 1 MiB value), little
# memory for the log cleaner. A transaction left open by a SIGKILLed
# producer is aborted within a second of its transaction.timeout.ms (the
# broker looks for timed-out transactions every 10 s by default): until
# then it holds back every read_committed reader of its partitions, which
# the transactional kill tests wait on after each kill.
write_config() {
        i=$1 n=$2
        voters=""
        for j in $(seq "$n"); do
                voters="$voters${voters:+,}$j@127.0.0.1:$(controller_port "$j")"
        done
        rf=1 isr=1
        if [ "$n" -ge 3 ]; then
                rf=3 isr=2
        fi
        listeners="PLAINTEXT://127.0.0.1:$(client_port "$i")"
        inter=PLAINTEXT
        protocols=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
        if scram; then
                listeners="$listeners,SASL_PLAINTEXT://127.0.0.1:$(scram_port "$i")"
        fi
        if secure; then
                listeners="SASL_SSL://127.0.0.1:$(client_port "$i"),SSL://127.0.0.1:$(mtls_port "$i")"
                inter=SSL
                protocols=CONTROLLER:SSL,SSL:SSL,SASL_SSL:SASL_SSL
        fi
        mkdir -p "$dir/node$i"
        cat >"$dir/node$i/server.properties" <<EOF
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=$listeners,CONTROLLER://127.0.0.1:$(controller_port "$i")
advertised.listeners=$listeners
controller.listener.names=CONTROLLER
inter.broker.listener.name=$inter
listener.security.protocol.map=$protocols
log.dirs=$dir/node$i/data
num.partitions=4
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
transaction.state.log.num.partitions=8
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=1000
group.consumer.min.session.timeout.ms=1000
group.consumer.session.timeout.ms=6000
group.consumer.min.heartbeat.interval.ms=100
group.consumer.heartbeat.interval.ms=500
message.max.bytes=8388608
replica.fetch.max.bytes=8388608
broker.session.timeout.ms=4000
broker.heartbeat.interval.ms=500
controller.quorum.election.timeout.ms=1000
controller.quorum.fetch.timeout.ms=2000
replica.lag.time.max.ms=5000
unclean.leader.election.enable=false
auto.create.topics.enable=true
delete.topic.enable=true
log.cleaner.dedupe.buffer.size=2097152
log.segment.bytes=67108864
num.network.threads=2
num.io.threads=4
EOF
        if scram; then
                cat >>"$dir/node$i/server.properties" <<EOF
sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
EOF
        fi
        if secure; then
                plain_users=""
                for u in $SECURE_USERS; do
                        plain_users="$plain_users user_$u=\"$u-secret\""
                done
                cat >>"$dir/node$i/server.properties" <<EOF
sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required$plain_users;
ssl.keystore.type=PEM
ssl.keystore.location=$dir/tls/$BROKER_CN.keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$dir/tls/ca.pem
ssl.client.auth=required
listener.name.sasl_ssl.ssl.client.auth=none
ssl.principal.mapping.rules=RULE:^CN=([^,]+)\$/\$1/,DEFAULT
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:admin;User:$BROKER_CN
EOF
        fi
}

write_log_config() {
        cat >"$dir/log4j2.properties" <<'EOF'
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.org.name = org.apache.kafka
logger.org.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = WARN
EOF
}

# java_run LOGDIR CLASS ARGS...: the broker's JVM, or one of its tools.
java_run() {
        logs=$1
        shift
        mkdir -p "$logs"
        exec java -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
                -Djava.awt.headless=true \
                -Dlog4j2.configurationFile="$dir/log4j2.properties" \
                -Dkafka.logs.dir="$logs" -cp "$libs/*" "$@"
}

format_node() {
        i=$1
        set --
        if scram; then
                for m in SCRAM-SHA-256 SCRAM-SHA-512; do
                        set -- "$@" --add-scram "$m=[name=$SCRAM_USER,password=$SCRAM_PASSWORD]"
                done
        fi
        if secure; then
                for u in $SECURE_USERS; do
                        set -- "$@" --add-scram "SCRAM-SHA-512=[name=$u,password=$u-secret]"
                done
        fi
        (java_run "$dir/node$i/logs" kafka.tools.StorageTool format -t "$(cat "$dir/cluster.id")" \
                -c "$dir/node$i/server.properties" -g "$@") >"$dir/node$i/format.log" 2>&1 ||
                { cat "$dir/node$i/format.log" >&2; die "formatting node $i failed"; }
}

pid_of() { cat "$dir/node$1/pid" 2>/dev/null || true; }

alive() {
        p=$(pid_of "$1")
        [ -n "$p" ] && kill -0 "$p" 2>/dev/null
}

launch_node() {
        i=$1
        if alive "$i"; then
                return 0
        fi
        mkdir -p "$dir/node$i/logs"
        # A fresh marker each start: the wait below looks for this start's line.
        : >"$dir/node$i/logs/server.log"
        (
                cd "$dir/node$i"
                java_run "$dir/node$i/logs" kafka.Kafka "$dir/node$i/server.properties"
        ) >"$dir/node$i/stdout.log" 2>&1 </dev/null &
        echo $! >"$dir/node$i/pid"
}

# A node's last words, on stderr.
node_log() {
        for f in "$dir/node$1/stdout.log" "$dir/node$1/logs/server.log"; do
                [ -s "$f" ] || continue
                echo "--- $f (last 30 lines)" >&2
                tail -30 "$f" >&2
        done
}

# Up when the node logs that it started: its listeners answer from then on.
# A node that exits while starting is started once more on its data (a
# port still held for a moment, a peer not up yet), its log shown first.
wait_node() {
        i=$1
        t=0
        tries=1
        while ! grep -q "Kafka Server started" "$dir/node$i/logs/server.log" 2>/dev/null; do
                alive "$i" || {
                        node_log "$i"
                        [ "$tries" -lt 2 ] || die "node $i exited while starting (logs: $dir/node$i/logs)"
                        echo "kafka.sh: node $i exited while starting; starting it once more" >&2
                        tries=$((tries + 1))
                        rm -f "$dir/node$i/pid"
                        sleep 1
                        launch_node "$i"
                        t=0
                        continue
                }
                t=$((t + 1))
                [ "$t" -le 1200 ] || die "node $i did not start within 120 s (logs: $dir/node$i/logs)"
                sleep 0.1
        done
}

start() {
        n=1
        with_scram=0
        with_secure=0
        while [ $# -gt 0 ]; do
                case "$1" in
                --scram)
                        with_scram=1
                        shift
                        ;;
                --secure)
                        with_secure=1
                        shift
                        ;;
                --nodes)
                        n="${2:-}"
                        shift 2 || die "--nodes needs a number"
                        ;;
                --nodes=*)
                        n="${1#--nodes=}"
                        shift
                        ;;
                *) die "start: unknown argument: $1" ;;
                esac
        done
        case "$n" in
        1 | 3) ;;
        *) die "start: --nodes is 1 or 3" ;;
        esac
        [ "$with_scram$with_secure" != 11 ] || die "start: --scram or --secure, not both"
        if [ "$(nodes)" -gt 0 ]; then
                running=0
                for i in $(seq "$(nodes)"); do
                        if alive "$i"; then running=$((running + 1)); fi
                done
                if [ "$running" -gt 0 ] && [ "$(nodes)" -ne "$n" ]; then
                        die "a cluster of $(nodes) nodes runs in $dir: stop it first"
                fi
                if [ "$running" -eq 0 ]; then
                        rm -rf "$dir"
                fi
        fi
        fetch
        mkdir -p "$dir"
        echo "$n" >"$dir/nodes"
        if [ "$with_scram" = 1 ]; then
                : >"$dir/scram"
        fi
        if [ "$with_secure" = 1 ]; then
                : >"$dir/secure"
                make_tls
        fi
        # A cluster id is 16 random bytes in URL-safe base64 without padding
        # (what kafka-storage.sh random-uuid prints), made without a JVM;
        # never one that starts with "-", which StorageTool's command line
        # would read as an option (Kafka's own Uuid.randomUuid skips those
        # too): one start in 64 would fail to format.
        while [ ! -s "$dir/cluster.id" ] || [ "$(cut -c1 "$dir/cluster.id")" = - ]; do
                head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n' >"$dir/cluster.id"
        done
        write_log_config
        for i in $(seq "$n"); do
                write_config "$i" "$n"
                [ -f "$dir/node$i/data/meta.properties" ] || format_node "$i"
                launch_node "$i"
        done
        for i in $(seq "$n"); do
                wait_node "$i"
        done
        if secure; then
                echo "kafka.sh: secured: SASL_SSL on $(bootstrap), mTLS on $(mtls_bootstrap);" \
                        "client properties: $0 secure-props USER [scram|plain|mtls]" \
                        "(users: $SECURE_USERS; CA: $dir/tls/ca.pem)" >&2
        fi
        bootstrap
}

node_arg() {
        [ -n "${1:-}" ] || die "which node? (1..$(nodes))"
        case "$1" in
        *[!0-9]*) die "not a node number: $1" ;;
        esac
        [ "$1" -ge 1 ] && [ "$1" -le "$(nodes)" ] || die "no node $1 (1..$(nodes))"
}

# SIGTERM is a controlled shutdown: leaders move away first. A node that has
# not exited after 60 s gets SIGKILL.
term_node() {
        i=$1
        alive "$i" || return 0
        p=$(pid_of "$i")
        kill -TERM "$p" 2>/dev/null || true
        t=0
        while kill -0 "$p" 2>/dev/null; do
                t=$((t + 1))
                if [ "$t" -gt 600 ]; then
                        kill -KILL "$p" 2>/dev/null || true
                fi
                sleep 0.1
        done
        rm -f "$dir/node$i/pid"
}

kill_node() {
        i=$1
        alive "$i" || die "node $i is not running"
        p=$(pid_of "$i")
        kill -KILL "$p"
        while kill -0 "$p" 2>/dev/null; do sleep 0.02; done
        rm -f "$dir/node$i/pid"
}

stop_all() {
        n=$(nodes)
        for i in $(seq "$n"); do
                p=$(pid_of "$i")
                if [ -n "$p" ]; then kill -TERM "$p" 2>/dev/null || true; fi
        done
        for i in $(seq "$n"); do
                term_node "$i"
        done
        rm -rf "$dir"
}

status() {
        n=$(nodes)
        [ "$n" -gt 0 ] || {
                echo "no cluster in $dir"
                return 1
        }
        up=0
        for i in $(seq "$n"); do
                if alive "$i"; then
                        echo "node $i: running, pid $(pid_of "$i"), 127.0.0.1:$(client_port "$i")"
                        up=$((up + 1))
                else
                        echo "node $i: stopped, 127.0.0.1:$(client_port "$i")"
                fi
        done
        echo "bootstrap: $(bootstrap)"
        [ "$up" -gt 0 ]
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
fetch) fetch ;;
start) start "$@" ;;
stop)
        if [ $# -gt 0 ]; then
                node_arg "$1"
                term_node "$1"
        else
                stop_all
        fi
        ;;
kill)
        node_arg "${1:-}"
        kill_node "$1"
        ;;
restart)
        node_arg "${1:-}"
        term_node "$1"
        launch_node "$1"
        wait_node "$1"
        ;;
status) status ;;
bootstrap) bootstrap ;;
scram-bootstrap) scram_bootstrap ;;
mtls-bootstrap) mtls_bootstrap ;;
secure-props) secure_props "$@" ;;
acl) acl "$@" ;;
-h | --help | help) usage ;;
*)
        usage >&2
        exit 64
        ;;
esac
