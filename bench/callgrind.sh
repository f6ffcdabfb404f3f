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
# The inclusive count of function $1 in the function list on stdin ("" when
# the process never ran it). Its line reads "COUNT (PCT)  FILE:FUNCTION [OBJ]",
# FILE "???" without debug information.
fn_count() {
        awk -v fn="$1" '{
                f = $3; sub(/^.*:/, "", f)
                if (f == fn) { gsub(",", "", $1); print $1; exit }
        }'
}
for f in "$dir"/cg.*; do
        # --auto=no: with debug information callgrind_annotate would also
        # print the benchmark's source, where every side's name appears
        # (a call, a declaration) whichever process this was.
        ann=$(callgrind_annotate --inclusive=yes --auto=no "$f" 2>/dev/null)
        side= thread=
        # ordered_versioned's baseline "neither": kretry, both features off
        for s in neither:bench_kretry_plain_side kretry:bench_kretry_side \
                raw:bench_raw_side; do
                thread=$(echo "$ann" | fn_count "${s#*:}")
                if [ -n "$thread" ]; then
                        side=${s%%:*}
                        break
                fi
        done
        [ -n "$side" ] || continue
        total=$(echo "$ann" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
        printf '%s %s %s %s\n' "$side" "$n" "$total" "$thread"
done | sort >"$dir/counts"
# Both sides or nothing: a table with one side missing would read as a
# measurement.
if ! grep -q '^kretry ' "$dir/counts" ||
        ! grep -Eq '^(raw|neither) ' "$dir/counts" ||
        [ "$(wc -l <"$dir/counts")" -ne 2 ]; then
        echo "callgrind.sh: expected one kretry and one baseline process in $dir, found:" >&2
        cat "$dir/counts" >&2
        exit 1
fi
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
