#!/bin/sh
# Runs a command and passes only when it exits with the expected status AND
# its output holds the expected text: CTest's PASS_REGULAR_EXPRESSION alone
# ignores the exit status, so a crash after the right line would pass.
#   expect_output.sh [--stdout] STATUS PATTERN COMMAND [ARG...]
# PATTERN is an extended regular expression matched against each line of
# the output (stdout and stderr together, or stdout only with --stdout).
# The output is echoed, so the CTest log shows it.
set -u
streams=both
if [ "${1:-}" = "--stdout" ]; then
        streams=stdout
        shift
fi
if [ $# -lt 3 ]; then
        echo "usage: expect_output.sh [--stdout] STATUS PATTERN COMMAND [ARG...]" >&2
        exit 2
fi
want="$1"
pattern="$2"
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if [ "$streams" = both ]; then
        "$@" >"$out" 2>&1
        got=$?
else
        "$@" >"$out"
        got=$?
fi
cat "$out"
fail=0
if [ "$got" -ne "$want" ]; then
        if [ "$got" -gt 128 ]; then
                echo "FAIL: $1 ended by signal $((got - 128)), expected exit status $want" >&2
        else
                echo "FAIL: $1 exited with status $got, expected $want" >&2
        fi
        fail=1
fi
if ! grep -Eq -- "$pattern" "$out"; then
        echo "FAIL: no line of the $streams output matches: $pattern" >&2
        fail=1
fi
exit $fail
