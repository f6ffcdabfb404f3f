#!/bin/sh
# Every manual page the build made renders with man -l, without a warning
# from groff, and its SYNOPSIS carries the first usage line of the
# command's --help (the page is made from it).
#   man_check.sh KRETRY_BIN MAN_DIR COMMAND...   (as cmake/kretry-man.sh)
set -eu
bin="$1"
dir="$2"
shift 2
command -v man >/dev/null || {
        echo "SKIPPED: man is not installed"
        exit 77
}
[ -d "$dir" ] || {
        echo "SKIPPED: no manual pages in $dir (help2man missing at build time)"
        exit 77
}
fails=0
for cmd in "$@"; do
        if [ "$cmd" = - ]; then
                page=kretry args=""
        else
                page="kretry-$cmd" args=$(echo "$cmd" | tr - ' ')
        fi
        case "$cmd" in dev-broker) args=dev-broker ;; esac
        f="$dir/$page.1"
        if ! text=$(MANWIDTH=200 man --warnings -l "$f" 2>"$dir/$page.err") ||
                [ -s "$dir/$page.err" ]; then
                echo "$page: man -l failed or warned:" >&2
                cat "$dir/$page.err" >&2
                fails=$((fails + 1))
                continue
        fi
        # The first usage line, words squeezed as man fills them.
        usage=$("$bin" $args --help | head -n1 | sed 's/^usage: *//' | tr -s ' ')
        synopsis=$(printf '%s\n' "$text" | sed -n '/^SYNOPSIS/,/^[A-Z]/p' | tr -s ' \n' '  ')
        case "$synopsis" in
        *"$usage"*) echo "$page: renders, $(printf '%s\n' "$text" | wc -l) lines" ;;
        *)
                echo "$page: its SYNOPSIS lacks '$usage':" >&2
                printf '%s\n' "$synopsis" >&2
                fails=$((fails + 1))
                ;;
        esac
done
[ "$fails" = 0 ]
