#!/bin/sh
# Installs the build into a scratch prefix, builds a program against it with
# pkg-config, runs it, and checks the shared library exports only kretry_*
# and finds, without LD_LIBRARY_PATH, the librdkafka kretry was built with.
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
others=$(nm -D --defined-only "$libdir/libkretry.so" | awk '{print $3}' | grep -v '^kretry_' || true)
if [ -n "$others" ]; then
        echo "exported symbols outside the public API:" $others >&2
        exit 1
fi
echo "install: header, libraries and kretry.pc work from $dir/prefix"
