#!/bin/sh
# bench/callgrind_check.sh BIN PYTHON: bench/callgrind.sh --json on a short
# retry_hop run of BIN must name both sides with their own counts (a binary
# with debug information once had its sides mistaken for each other).
# Exits 77 (skipped) without valgrind.
set -e
command -v valgrind >/dev/null || { echo "valgrind not installed" >&2; exit 77; }
root=$(cd "$(dirname "$0")/.." && pwd)
log=$(mktemp /tmp/kretry-callgrind-check.XXXXXX)
trap 'rm -f "$log"' EXIT
status=0
out=$(KRETRY_BENCH_BIN=$1 "$root/bench/callgrind.sh" --json retry_hop 300 2>"$log") ||
        status=$?
cat "$log" >&2
# callgrind.sh keeps its files for reading; a test run does not need them.
dir=$(sed -n 's/^callgrind files: //p' "$log")
case "$dir" in
/tmp/kretry-callgrind.*) rm -rf "$dir" ;;
esac
[ "$status" = 0 ] || exit "$status"
printf '%s\n' "$out"
printf '%s' "$out" | "$2" -c '
import json, sys
c = json.load(sys.stdin)
for side in ("kretry", "raw"):
    assert c[side]["process_per_msg"] > 0 and c[side]["thread_per_msg"] > 0, side
assert c["kretry"]["process_per_msg"] != c["raw"]["process_per_msg"]
assert "own_per_msg" in c
print("both sides counted")
'
