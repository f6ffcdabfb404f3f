#!/bin/sh
# Checks kretry's packages on a clean Debian 12: debootstraps a minimal
# bookworm into ROOT (when it is not one yet), installs the .debs of DEBDIR
# there with apt (which brings their dependencies from Debian's archive),
# then, inside it, shows `man kretry-run`, runs `kretry demo`, builds the
# examples the -dev package ships (find_package and pkg-config) with only
# Debian's packages, and runs one on `kretry dev-broker`. As root (chroot).
#   scripts/deb-clean-check.sh ROOT [DEBDIR]   (default build/deb)
set -eu
root="$1"
debs=$(cd "${2:-$(dirname "$0")/../build/deb}" && pwd)
if [ ! -x "$root/usr/bin/apt-get" ]; then
        debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$root.log" 2>&1
fi
rm -rf "$root/tmp/debs"
mkdir -p "$root/tmp/debs"
cp "$debs"/libkretry0.1_*.deb "$debs"/libkretry-dev_*.deb "$debs"/kretry_*.deb "$root/tmp/debs/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount -t devpts devpts "$root/dev/pts"
trap 'umount "$root/dev/pts" "$root/proc"' EXIT
chroot "$root" /bin/sh -eu <<'IN'
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
apt-get update -qq
apt-get install -y -qq --no-install-recommends /tmp/debs/*.deb >/tmp/install.log
echo "installed: $(dpkg-query -W -f='${Package} ${Version}, ' libkretry0.1 libkretry-dev kretry)"
kretry --version
kretry demo --quiet | tail -n 1
# What a developer adds to build: a compiler, CMake, pkg-config, man, and
# kcat to produce the example's orders.
apt-get install -y -qq --no-install-recommends man-db g++ cmake make pkg-config kcat >/tmp/tools.log
man kretry-run | head -n 8
ex=/usr/share/doc/libkretry-dev/examples
cmake -S $ex -B /tmp/ex-find >/dev/null && cmake --build /tmp/ex-find -j2 >/dev/null
cmake -S $ex -B /tmp/ex-pc -DKRETRY_EXAMPLES_PKGCONFIG=ON >/dev/null && cmake --build /tmp/ex-pc -j2 >/dev/null
echo "examples built with find_package and pkg-config: $(ls /tmp/ex-find/orders_* /tmp/ex-pc/orders_* | wc -l) programs"
kretry dev-broker --topology $ex/yaml/orders.yaml >/tmp/broker.out 2>&1 &
broker=$!
i=0
until b=$(head -n1 /tmp/broker.out) && [ -n "$b" ]; do i=$((i + 1)); [ $i -lt 100 ]; sleep 0.1; done
printf 'k1:ok-1\nk2:flaky-2\nk3:fail-3\n' | kcat -P -b "$b" -t orders -K:
/tmp/ex-pc/orders_service "$b" consumer.session.timeout.ms=6000 >/tmp/svc.out 2>&1 &
svc=$!
i=0
until grep -q '^k2 attempt 2: OK' /tmp/svc.out && grep -q '^k3 attempt 1: FAIL' /tmp/svc.out; do
        i=$((i + 1)); [ $i -lt 300 ] || { cat /tmp/svc.out; exit 1; }; sleep 0.1
done
kill -TERM $svc; wait $svc
kill -TERM $broker; wait $broker || true
cat /tmp/svc.out
IN
echo "deb-clean-check: the packages install and work on a clean Debian 12 ($root)"
