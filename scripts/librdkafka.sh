#!/bin/sh
# A current librdkafka for kretry: Debian's own source package of a pinned
# upstream release, fetched with apt-get source from Debian's archive,
# checked, and built with Debian 12's -dev packages into a prefix under the
# user's cache, which kretry's CMake finds through pkg-config and names in
# its binaries' rpath (scripts/install-deps.sh runs this script; Debian
# 12's own librdkafka, 2.0.2, cannot log in with SCRAM to Kafka 4).
# `kretry --version` prints the librdkafka it loaded. Nothing of the
# system's apt configuration is read or written beyond apt.conf (a proxy
# set there is honoured): the sources list, the package lists and apt's
# cache are the script's own, and only a source package is downloaded,
# never a binary one.
#
#   librdkafka.sh build    fetch, check and build it unless the prefix is
#                          already built for the wanted version (a stamp)
#   librdkafka.sh prefix   print the prefix
#
#   KRETRY_RDKAFKA_CACHE=DIR   the cache (default
#                              ${XDG_CACHE_HOME:-$HOME/.cache}/kretry/librdkafka)
#
# The Debian 12 packages it needs (NEEDS below) are installed when
# missing.
#
# What is checked: apt verifies the OpenPGP signature of the suite's
# InRelease against debian-archive-keyring, the Sources index against the
# hashes InRelease lists, and every downloaded file against the sizes and
# hashes the Sources index lists; dpkg-source -x checks the files against
# the .dsc's checksums again. The .dsc's own signature (the Debian
# maintainer's key) is not checked: debian-keyring is not a Debian 12
# default, and the archive signature already covers the file.
set -eu

# The pinned release (Debian sid's package of upstream 2.14.2, not patched
# by Debian: the patches in debian/patches only build against Debian's
# unbundled nanopb and cJSON, and are not applied here). If the archive no
# longer serves it, the newest version it serves that is at least
# MIN_VERSION is taken instead, and the script says so.
PIN=2.14.2-1
# Below 2.6.1, librdkafka cannot log in with SCRAM to Kafka 4 (librdkafka
# issue 4895).
MIN_VERSION=2.6.1
SUITE_LINE="deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] \
http://deb.debian.org/debian sid main"
# Every feature a Kafka deployment may need, each required: a missing -dev
# package fails the build instead of yielding a librdkafka without it.
CONFIGURE_FLAGS="--enable-ssl --enable-gssapi --enable-zstd --enable-lz4-ext \
--enable-zlib --enable-curl"

cache="${KRETRY_RDKAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kretry/librdkafka}"
prefix="$cache/prefix"
stamp="$prefix/.kretry-stamp"

say() { echo "librdkafka: $*" >&2; }

# As root, apt downloads as its _apt user, who cannot enter root's home;
# apt then downloads as root with a warning. Said once, here, instead.
sandbox=""
if [ "$(id -u)" -eq 0 ]; then
        sandbox="-o APT::Sandbox::User=root"
fi

# apt-get and apt-cache, confined to the script's own directories.
apt_own() {
        tool="$1"
        shift
        "$tool" -o Dir::Etc::sourcelist="$cache/apt/sources.list" \
                -o Dir::Etc::sourceparts=/nonexistent \
                -o Dir::State::Lists="$cache/apt/lists" \
                -o Dir::Cache="$cache/apt/cache" $sandbox "$@"
}

# The version to build: the pin if served, otherwise the newest served
# that is at least MIN_VERSION.
resolve_version() {
        versions=$(apt_own apt-cache showsrc librdkafka 2>/dev/null |
                sed -n 's/^Version: //p')
        if printf '%s\n' $versions | grep -qx "$PIN"; then
                echo "$PIN"
                return
        fi
        best=""
        for v in $versions; do
                if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then
                        best="$v"
                fi
        done
        if [ -z "$best" ] || dpkg --compare-versions "$best" lt "$MIN_VERSION"; then
                say "the archive serves neither $PIN nor any version >= $MIN_VERSION (served: ${versions:-none})"
                exit 1
        fi
        say "the pinned $PIN has left the archive; taking $best, the newest served (minimum $MIN_VERSION)"
        echo "$best"
}

fetch() {
        mkdir -p "$cache/apt/lists/partial" "$cache/apt/cache/archives/partial"
        echo "$SUITE_LINE" >"$cache/apt/sources.list"
        say "reading Debian's source index ($cache/apt)"
        apt_own apt-get -qq update
        version=$(resolve_version)
        rm -rf "$cache/src"
        mkdir -p "$cache/src"
        (cd "$cache/src" && apt_own apt-get -qq source --download-only \
                "librdkafka=$version" >/dev/null)
}

# Extracts (checking the .dsc's checksums), builds and installs into a
# fresh prefix; the stamp is written last, so a build cut short is redone.
build() {
        upstream=${version%-*}
        dir="$cache/src/librdkafka-$upstream"
        rm -rf "$prefix"
        say "checking and building $version into $prefix (log: $cache/build.log)"
        if ! (cd "$cache/src" && dpkg-source --skip-patches -x \
                "librdkafka_$version.dsc" "librdkafka-$upstream" &&
                cd "$dir" && ./configure --prefix="$prefix" $CONFIGURE_FLAGS &&
                make -j"$(nproc)" libs && make install) \
                >"$cache/build.log" 2>&1; then
                tail -n 30 "$cache/build.log" >&2
                say "build failed; the whole log is $cache/build.log"
                exit 1
        fi
        echo "$want" >"$stamp"
        rm -rf "$dir"
}

# The Debian 12 packages the fetch and the build need, installed when
# missing (with sudo when not root), as scripts/install-deps.sh does.
NEEDS="build-essential pkg-config python3 dpkg-dev apt debian-archive-keyring \
libssl-dev libsasl2-dev libzstd-dev liblz4-dev zlib1g-dev \
libcurl4-openssl-dev util-linux"
install_needs() {
        missing=""
        for p in $NEEDS; do
                dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
                        grep -q "ok installed" || missing="$missing $p"
        done
        [ -n "$missing" ] || return 0
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
                --no-install-recommends $missing
}

case "${1:-}" in
prefix)
        echo "$prefix"
        ;;
build)
        install_needs
        mkdir -p "$cache"
        # One build at a time (demo.sh and test.sh may start together).
        exec 9>"$cache/lock"
        flock 9
        want="librdkafka $PIN $CONFIGURE_FLAGS"
        if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
                say "$PIN already built in $prefix"
                exit 0
        fi
        fetch
        want="librdkafka $version $CONFIGURE_FLAGS"
        if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
                say "$version already built in $prefix"
                exit 0
        fi
        build
        say "$version built in $prefix"
        ;;
*)
        echo "usage: $0 build | prefix" >&2
        exit 64
        ;;
esac
