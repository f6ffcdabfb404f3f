#!/bin/sh
# Installs the build into a scratch prefix, builds a program against it with
# pkg-config, runs it, and checks that the shared library exports exactly
# the functions kretry.h declares, has a SONAME and finds, without
# LD_LIBRARY_PATH, the librdkafka kretry was built with.
#   install_check.sh BUILD_DIR SANITIZERS RDKAFKA_PC_DIR
set -eu
build="$1"
san="${2:+-fsanitize=$2}"
rdkafka_pc="$3"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cmake --install "$build" --prefix "$dir/prefix" >/dev/null
pc=$(find "$dir/prefix" -name kretry.pc)
export PKG_CONFIG_PATH="$(dirname "$pc"):$rdkafka_pc"
cat >"$dir/app.c" <<'C'
#include <kretry/kretry.h>
#include <stdio.h>
int main(void) {
        kretry_conf_t *conf = kretry_conf_new();
        char err[256];
        int bad = kretry_conf_set(conf, "retry.jitter", "150%", err, sizeof(err));
        kretry_conf_destroy(conf);
        printf("%s %s\n", kretry_version_str(), bad ? err : "accepted");
        return bad == KRETRY_ERR_INVALID_VALUE ? 0 : 1;
}
C
cc -Wall -Wextra -Werror $san "$dir/app.c" -o "$dir/app" $(pkg-config --cflags --libs kretry)
libdir=$(pkg-config --variable=libdir kretry)
out=$(LD_LIBRARY_PATH="$libdir" "$dir/app")
echo "$out"
case "$out" in
*"retry.jitter: 150% is out of range"*) ;;
*)
        echo "the program built against the install did not report the bad jitter" >&2
        exit 1
        ;;
esac
# The installed library names the librdkafka it was built with in its
# rpath: the program loads that one, not the system's.
want="$(pkg-config --variable=libdir rdkafka)/librdkafka.so.1"
loaded=$(LD_LIBRARY_PATH="$libdir" ldd "$dir/app" | awk '$1 == "librdkafka.so.1" { print $3 }')
if [ "$(readlink -f "$loaded")" != "$(readlink -f "$want")" ]; then
        echo "the program loads librdkafka from '$loaded', not $want" >&2
        exit 1
fi
# The shared library exports exactly the functions kretry.h declares
# (KRETRY_EXPORT), no more and no fewer, and carries a SONAME.
header=$(find "$dir/prefix" -path '*/kretry/kretry.h')
grep -v '^#define KRETRY_EXPORT' "$header" | tr '\n' ' ' |
        grep -o 'KRETRY_EXPORT[^(;]*(' | grep -o '[A-Za-z_0-9]*($' | tr -d '(' |
        sort >"$dir/declared"
nm -D --defined-only "$libdir/libkretry.so" | awk '{print $3}' | sort >"$dir/exported"
if ! diff -u "$dir/declared" "$dir/exported" >"$dir/symbols.diff"; then
        echo "the exports of libkretry.so (+) differ from kretry.h's declarations (-):" >&2
        grep '^[-+][a-z_]' "$dir/symbols.diff" >&2
        exit 1
fi
soname=$(objdump -p "$libdir/libkretry.so" | awk '$1 == "SONAME" { print $2 }')
case "$soname" in
libkretry.so.[0-9]*) ;;
*)
        echo "libkretry.so has no versioned SONAME ('$soname')" >&2
        exit 1
        ;;
esac
echo "libkretry.so: SONAME $soname, $(wc -l <"$dir/exported") symbols, those of kretry.h"
echo "install: header, libraries and kretry.pc work from $dir/prefix"
