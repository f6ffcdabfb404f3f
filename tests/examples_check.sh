#!/bin/sh
# Installs the build into a fresh prefix, builds examples/ against it out of
# tree twice (find_package(kretry) and pkg-config) and once against the
# build tree's package, then runs each example as a service on its own
# `kretry dev-broker` (the installed one): three orders — one handled at
# once, one on its first retry, one dead-lettered — must reach the handler
# as expected, and SIGTERM must stop the service with exit 0.
#   examples_check.sh BUILD_DIR SOURCE_DIR RDKAFKA_PC_DIR [SANITIZERS]
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
rdkafka_pc="$3"
san="${4:+-fsanitize=$4}"
command -v kcat >/dev/null || {
        echo "SKIPPED: kcat is not installed"
        exit 77
}
work="$build/examples-check"
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
pcdir=$(dirname "$(find "$prefix" -name kretry.pc)")

configure() { # DIR ARGS...: configure and build examples/ there
        d="$1"
        shift
        if ! { cmake -S "$src/examples" -B "$work/$d" -DCMAKE_C_FLAGS="$san" \
                -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" "$@" &&
                cmake --build "$work/$d" -j2; } >"$work/$d.log" 2>&1; then
                cat "$work/$d.log" >&2
                echo "examples: the $d build failed" >&2
                exit 1
        fi
        echo "examples: built with $d"
}
configure find -DCMAKE_PREFIX_PATH="$prefix"
PKG_CONFIG_PATH="$pcdir:$rdkafka_pc" configure pkg-config -DKRETRY_EXAMPLES_PKGCONFIG=ON
configure build-tree -Dkretry_DIR="$build"

pids=""
cleanup() {
        for p in $pids; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

# run NAME COMMAND...: one dev-broker, three orders, the service, SIGTERM.
run() {
        name="$1"
        shift
        out="$work/$name"
        "$prefix/bin/kretry" dev-broker --topology "$src/examples/yaml/orders.yaml" \
                >"$out.broker" 2>&1 &
        broker=$!
        pids="$pids $broker"
        i=0
        until b=$(head -n1 "$out.broker") && [ -n "$b" ]; do
                i=$((i + 1))
                [ "$i" -lt 100 ] || { echo "$name: dev-broker did not start" >&2; return 1; }
                sleep 0.1
        done
        printf 'k1:ok-1\nk2:flaky-2\nk3:fail-3\n' | kcat -P -b "$b" -t orders -K:
        KAFKA_BOOTSTRAP="$b" KAFKA_SESSION_TIMEOUT_MS=6000 "$@" "$b" \
                consumer.session.timeout.ms=6000 >"$out.out" 2>"$out.err" &
        svc=$!
        pids="$pids $svc"
        i=0
        while ! { grep -q '^k1 attempt 1: OK$' "$out.out" &&
                grep -q '^k2 attempt 1: RETRY$' "$out.out" &&
                grep -q '^k2 attempt 2: OK$' "$out.out" &&
                grep -q '^k3 attempt 1: FAIL$' "$out.out"; }; do
                i=$((i + 1))
                if [ "$i" -ge 300 ] || ! kill -0 "$svc" 2>/dev/null; then
                        echo "$name: the orders were not handled as expected; its output:" >&2
                        cat "$out.out" "$out.err" >&2
                        kill "$broker" "$svc" 2>/dev/null || true
                        return 1
                fi
                sleep 0.1
        done
        kill -TERM "$svc"
        rc=0
        wait "$svc" || rc=$?
        kill -TERM "$broker"
        wait "$broker" || true
        if [ "$rc" != 0 ]; then
                echo "$name: exit $rc after SIGTERM; its output:" >&2
                cat "$out.out" "$out.err" >&2
                return 1
        fi
        echo "$name: handled 3 orders, stopped on SIGTERM: $(tail -n1 "$out.out")"
}

# The yaml example takes its file, and the bootstrap and session timeout
# from the environment (sh -c drops the arguments run adds); the others
# take them as arguments.
fails=0
for variant in find pkg-config; do
        d="$work/$variant"
        run "$variant-plain" "$d/orders_service" &
        p1=$!
        run "$variant-event-loop" "$d/orders_loop" &
        p2=$!
        run "$variant-cpp" "$d/orders_service_cpp" &
        p3=$!
        run "$variant-yaml" sh -c "exec '$d/orders_yaml' '$src/examples/yaml/orders.yaml'" &
        p4=$!
        for p in $p1 $p2 $p3 $p4; do
                wait "$p" || fails=$((fails + 1))
        done
done
run static "$work/find/orders_service_static" || fails=$((fails + 1))
if [ "$fails" != 0 ]; then
        echo "examples: $fails runs failed" >&2
        exit 1
fi
echo "examples: every example built three ways and handled its orders"
