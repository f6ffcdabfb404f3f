#!/bin/sh
# Writes the manual pages kretry.1 and kretry-COMMAND.1 into OUTDIR with
# help2man, from the --help text of the kretry binary itself, so that the
# pages cannot drift from it. The usage lines become help2man's "Usage:"
# and "or:" lines (its SYNOPSIS); every page's NAME line is the first
# sentence of the command's description.
#   kretry-man.sh KRETRY_BIN OUTDIR VERSION COMMAND...
#   (COMMAND "-" is kretry itself, "dlq-export" is `kretry dlq export`)
set -eu
bin="$1"
out="$2"
version="$3"
shift 3
mkdir -p "$out"
awk_usage='
NR == 1 { sub(/^usage:/, "Usage:"); line = $0; u = 1; next }
u && /^       kretry / { print line; sub(/^ +/, ""); line = "  or:  " $0; next }
u && /^  +[^ ]/ { sub(/^ +/, " "); line = line $0; next }
u { print line; u = 0 }
{ print }
END { if (u) print line }'
pages=""
for cmd in "$@"; do
        [ "$cmd" = - ] || pages="$pages kretry-$cmd"
done
for cmd in "$@"; do
        if [ "$cmd" = - ]; then
                args="" page=kretry
        else
                args=$(echo "$cmd" | tr - ' ') page="kretry-$cmd"
        fi
        # dev-broker is one command, not dev broker.
        case "$cmd" in dev-broker) args=dev-broker ;; esac
        help=$("$bin" $args --help)
        # The description's first sentence (the paragraph after the usage).
        name=$(printf '%s\n' "$help" | awk '
                /^usage:/ { u = 1; next }
                u && /^ / { next }
                u && /^$/ { u = 0; d = 1; next }
                d && /^$/ { exit }
                d { t = t (t ? " " : "") $0 }
                END { print t }' | sed 's/ *[(.;:].*//')
        see=""
        if [ "$page" = kretry ]; then
                for p in $pages; do see="$see${see:+, }\\fB$p\\fR(1)"; done
        else
                see="\\fBkretry\\fR(1)"
        fi
        printf '[SEE ALSO]\n%s\n' "$see" >"$out/$page.h2m"
        help2man --no-info --section=1 --source="kretry $version" \
                --manual="kretry manual" --version-string="$version" \
                --help-option="$args --help | awk '$awk_usage'" \
                --name="$name" --include="$out/$page.h2m" \
                --output="$out/$page.1.tmp" "$bin"
        # help2man names the page after the binary: name it after the command.
        sed -e "s/^\\.TH KRETRY /.TH $(echo "$page" | tr a-z A-Z) /" \
                -e "/^\\.SH NAME/{n;s/^kretry /$page /;}" \
                "$out/$page.1.tmp" >"$out/$page.1"
        rm -f "$out/$page.1.tmp" "$out/$page.h2m"
done
