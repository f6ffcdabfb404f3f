#!/usr/bin/python3
"""Black-box test of kretry logged in with a client certificate (mTLS) on
the secured cluster of `scripts/kafka.sh start --secure`: its SSL
listener in KRETRY_TEST_MTLS_BOOTSTRAP, the client's librdkafka
properties (security.protocol=SSL, the CA, the certificate and its key) in
the file KRETRY_TEST_MTLS_PROPS; its principal (User:<CN>) holds only the
ACLs scripts/test.sh grants it. The test's own side (topics, input, the
DLQ read back) logs in as KRETRY_TEST_KAFKA_PROPS says (bbkafka.py).

kretry run, given the certificate with -X, handles every message and
dead-letters the poison one (read back with kcat, class permanent); the
same run without the certificate's properties handles nothing.

usage: blackbox_mtls.py PATH/TO/kretry
Exit 0 on success, 1 on failure, 77 (skipped) without a secured cluster.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import Cluster, chain, check, group_x, kcat, props  # noqa: E402
from bbkafka import run as run_main  # noqa: E402

MESSAGES = 10
HANDLER = 'v=$(cat); echo "$v" >> "$LOG"; [ "$v" = poison ] && exit 2; exit 0'


def handled(log):
    if not os.path.exists(log):
        return set()
    with open(log) as f:
        return set(f.read().split())


def run(cli, k, bootstrap, x, log, err):
    return subprocess.Popen(
        [cli, "run", "--bootstrap", bootstrap, "--source", k.name("orders"),
         "--group", k.group("orders-mtls"), "--tiers", "100ms",
         "--max-attempts", "2", "--jitter", "0", *group_x(), *x,
         "--exec", HANDLER], env=dict(os.environ, LOG=log), stderr=err)


def stop(p):
    p.send_signal(signal.SIGTERM)
    return p.wait(timeout=60)


def main():
    bootstrap = os.environ.get("KRETRY_TEST_MTLS_BOOTSTRAP")
    if not (bootstrap and os.environ.get("KRETRY_TEST_MTLS_PROPS") and
            os.environ.get("KRETRY_TEST_BOOTSTRAP")):
        print("SKIPPED: blackbox_mtls needs the secured cluster of "
              "scripts/kafka.sh start --secure (KRETRY_TEST_BOOTSTRAP, "
              "KRETRY_TEST_MTLS_BOOTSTRAP, KRETRY_TEST_MTLS_PROPS)")
        return 77
    cli = sys.argv[1]
    x = [a for kv in props("KRETRY_TEST_MTLS_PROPS")
         for a in ("-X", "=".join(kv))]
    k = Cluster(chain("orders", 2, 1)).start(cli)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "handled.log")
            kcat(k.bootstrap, ["-P", "-t", k.name("orders"), "-K", ":"],
                 stdin=("".join("k%d:m%d\n" % (i, i) for i in range(MESSAGES))
                        + "kp:poison\n").encode())
            want = {"m%d" % i for i in range(MESSAGES)} | {"poison"}

            # Without the certificate: the listener refuses the session
            # (librdkafka logs the TLS alert), nothing is handled.
            ca = dict(props("KRETRY_TEST_MTLS_PROPS"))["ssl.ca.location"]
            with open(os.path.join(tmp, "nocert.err"), "wb") as err:
                p = run(cli, k, bootstrap, ["-X", "security.protocol=SSL",
                                            "-X", "ssl.ca.location=" + ca],
                        log, err)
                refused = ""
                try:
                    deadline = time.monotonic() + 30
                    while time.monotonic() < deadline and p.poll() is None:
                        refused = open(err.name, errors="replace").read()
                        if "certificate" in refused:
                            break
                        time.sleep(0.1)
                finally:
                    stop(p)
            check("certificate" in refused and not handled(log),
                  "without a client certificate the listener refuses "
                  "kretry and nothing is handled (%s)" % refused[-300:])

            with open(os.path.join(tmp, "run.err"), "wb") as err:
                p = run(cli, k, bootstrap, x, log, err)
                dlq = ""
                try:
                    deadline = time.monotonic() + 90
                    while time.monotonic() < deadline:
                        if handled(log) >= want:
                            dlq = kcat(k.bootstrap, [
                                "-C", "-t", k.name("orders.dlq"), "-o",
                                "beginning", "-e", "-q", "-f",
                                "%k %s %h\n"])
                            if dlq.strip():
                                break
                        time.sleep(0.2)
                finally:
                    rc = stop(p)
                err_text = open(err.name, errors="replace").read()
            check(handled(log) >= want, "kretry run with the client "
                  "certificate handled all %d messages (%d; stderr: %s)"
                  % (len(want), len(handled(log) & want), err_text[-500:]))
            lines = dlq.strip().splitlines()
            check(len(lines) == 1 and lines[0].startswith("kp poison ") and
                  "kretry-error-class=permanent" in lines[0],
                  "the poison message is the one dead letter, class "
                  "permanent (%r)" % dlq)
            check(rc == 0, "one SIGTERM, exit 0 (%d)" % rc)
    finally:
        k.kill()
    return 0


if __name__ == "__main__":
    run_main(main)
