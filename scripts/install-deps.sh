#!/bin/sh
# Installs the Debian 12 packages kretry needs to build and test, and
# builds the librdkafka kretry links (scripts/librdkafka.sh: a current
# release from Debian's source package, cached; Debian 12's own 2.0.2 is
# below kretry's minimum). Uses sudo when not run as root.
set -eu
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
        SUDO="sudo"
fi
# libmicrohttpd-dev: the HTTP server of kretry ui; libcurl4-openssl-dev:
# the HTTP client of kretry run --http.
PKGS="build-essential cmake pkg-config libjansson-dev \
libcyaml-dev libavro-dev libcunit1-dev libmicrohttpd-dev libcurl4-openssl-dev"
# What the test suites and CI use beyond the build: independent Kafka
# clients for the black-box tests (kcat, python3-kafka), independent Avro
# readers for it_dlq_export (avrocat from avro-bin, python3-avro), binutils'
# nm for install_check, clang-format for scripts/check-format.sh, valgrind
# for bench_callgrind (instructions per message), chromium for browser_ui
# (kretry ui's page rendered in a real browser, headless), openssl to make
# the certificates of blackbox_http_tls, help2man to make the manual pages
# from --help and man-db to render them (man_pages), doxygen for the HTML
# API reference, dpkg-dev, debhelper and lintian for deb_package (the
# Debian packages, scripts/package-deb.sh), debootstrap for
# scripts/deb-clean-check.sh. A test
# whose tool is missing reports itself skipped; CI fails on that.
TEST_PKGS="kcat python3 python3-kafka python3-avro avro-bin binutils clang-format valgrind chromium openssl help2man man-db doxygen dpkg-dev debhelper lintian debootstrap"
# Real Apache Kafka for the tests' second pass and the bench (scripts/kafka.sh
# fetches the broker's jars with Maven and runs them on Java 17); never a
# dependency of kretry itself.
KAFKA_PKGS="openjdk-17-jre-headless maven"
for arg in "$@"; do
        case "$arg" in
        --test) PKGS="$PKGS $TEST_PKGS" ;;
        --kafka) PKGS="$PKGS $KAFKA_PKGS" ;;
        *)
                echo "usage: $0 [--test] [--kafka]" >&2
                exit 64
                ;;
        esac
done
missing=""
for p in $PKGS; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
                missing="$missing $p"
done
if [ -n "$missing" ]; then
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi
"$(dirname "$0")/librdkafka.sh" build
