#!/bin/sh
# Builds kretry's Debian packages — libkretry0.1 (the shared library, with
# a private librdkafka), libkretry-dev (header, kretry.pc, the CMake
# package, examples) and kretry (the command and its manual pages) — from
# debian/ with dpkg-buildpackage, on a copy of the tree in OUT, and checks
# them with lintian (its errors fail the script).
#   scripts/package-deb.sh [OUT]     (default build/deb)
# The librdkafka they carry is scripts/librdkafka.sh's (built when missing).
set -eu
out=$(mkdir -p "${1:-$(dirname "$0")/../build/deb}" && cd "${1:-$(dirname "$0")/../build/deb}" && pwd)
cd "$(dirname "$0")/.."
for tool in dpkg-buildpackage dh lintian; do
        command -v "$tool" >/dev/null || {
                echo "SKIPPED: $tool is not installed (scripts/install-deps.sh --test)"
                exit 77
        }
done
./scripts/librdkafka.sh build
prefix=$(./scripts/librdkafka.sh prefix)
version=$(dpkg-parsechangelog -S Version)
src="$out/kretry-$version"
rm -rf "$src" "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mkdir -p "$src"
# The tree as git sees it (tracked and new files, not the ignored ones).
git ls-files -z --cached --others --exclude-standard |
        tar --null -T - -cf - | tar -xf - -C "$src"
(cd "$src" && KRETRY_RDKAFKA_PREFIX="$prefix" dpkg-buildpackage -b -us -uc \
        -j"$(nproc)") >"$out/build.log" 2>&1 || {
        tail -n 40 "$out/build.log" >&2
        echo "package-deb: dpkg-buildpackage failed; the log is $out/build.log" >&2
        exit 1
}
cd "$out"
lintian --fail-on error --suppress-tags-from-file /dev/null ./*.changes
ls ./*.deb
echo "package-deb: $(ls ./*.deb | wc -l) packages in $out"
