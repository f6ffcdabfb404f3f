#!/bin/sh
# bench/callgrind.sh [--json] [SCENARIO [MESSAGES]]
# Instructions per message for each side of one run of SCENARIO (happy,
# retry_hop, dead_letter, ordered_versioned, delay; default happy, 20000
# messages; ordered_versioned's sides are "kretry" and "neither") under
# callgrind: exact counts, unaffected by other load on the machine. Process
# totals include client setup and close, so they are upper bounds; "thread" is
# the side's own thread (the handler loop), without librdkafka's threads.
# The callgrind files are kept in the directory printed last.
# --json: one JSON object on stdout instead (instructions per message, "own":
# kretry's process minus the raw process), the directory on stderr.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
json=0
if [ "$1" = --json ]; then
        json=1
        shift
fi
scenario=${1:-happy}
n=${2:-20000}
command -v valgrind >/dev/null || { echo "valgrind is required" >&2; exit 1; }
bin=${KRETRY_BENCH_BIN:-}
if [ -z "$bin" ]; then
        "$root/bench/run" --help >/dev/null # builds build-bench/ if needed
        bin="$root/build-bench/bench/kretry_bench"
fi
dir=$(mktemp -d /tmp/kretry-callgrind.XXXXXX)
valgrind --tool=callgrind --callgrind-out-file="$dir/cg.%p" "$bin" \
        --only "$scenario" --runs 1 --quick --messages "$n" \
        >"$dir/bench.out" 2>"$dir/bench.log" ||
        { echo "kretry_bench failed under callgrind: see $dir/bench.log" >&2; exit 1; }
for f in "$dir"/cg.*; do
        ann=$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null)
        if echo "$ann" | grep -q 'bench_kretry_plain_side'; then
                # ordered_versioned's baseline: kretry, both features off
                side=neither fn=bench_kretry_plain_side
        elif echo "$ann" | grep -q 'bench_kretry_side'; then
                side=kretry fn=bench_kretry_side
        elif echo "$ann" | grep -q 'bench_raw_side'; then
                side=raw fn=bench_raw_side
        else
                continue
        fi
        total=$(echo "$ann" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
        thread=$(echo "$ann" | awk -v fn="$fn" '$0 ~ fn { gsub(",", "", $1); print $1; exit }')
        printf '%s %s %s %s\n' "$side" "$n" "$total" "$thread"
done | sort >"$dir/counts"
if [ "$json" = 1 ]; then
        awk -v scenario="$scenario" -v n="$n" '
                { p[$1] = int($3 / n); t[$1] = int($4 / n) }
                END {
                        other = ("raw" in p) ? "raw" : "neither"
                        printf "{\"scenario\": \"%s\", \"messages\": %d", scenario, n
                        for (s in p)
                                printf ", \"%s\": {\"process_per_msg\": %d, \"thread_per_msg\": %d}", s, p[s], t[s]
                        if (("kretry" in p) && (other in p))
                                printf ", \"own_per_msg\": %d", p["kretry"] - p[other]
                        printf "}\n"
                }' "$dir/counts"
        echo "callgrind files: $dir" >&2
else
        while read -r side n total thread; do
                printf '%-7s %s messages: process %s Ir (%d/msg), thread %s Ir (%d/msg)\n' \
                        "$side" "$n" "$total" $((total / n)) "$thread" $((thread / n))
        done <"$dir/counts"
        echo "callgrind files: $dir"
fi
