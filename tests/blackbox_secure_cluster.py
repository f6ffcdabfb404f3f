#!/usr/bin/python3
"""Black-box test of the secured test cluster itself (scripts/kafka.sh
start --secure), which the secured pass relies on to prove that kretry
works with no more than a service's ACLs: if the cluster let anyone in,
that pass would prove nothing.

With kcat (an independent client): an anonymous PLAINTEXT client and a TLS
client without a certificate get no metadata; a wrong password is refused;
the user ui, without ACLs, sees a topic admin made as not authorized and
cannot write to it; svc writes to a topic inside its prefix (sec-) and not
to one outside it.

Runs in scripts/test.sh's secured pass, which exports KRETRY_KAFKA_DIR and
KRETRY_KAFKA_PORT (the users' properties come from scripts/kafka.sh
secure-props), KRETRY_TEST_BOOTSTRAP, KRETRY_TEST_MTLS_BOOTSTRAP and
KRETRY_TEST_KAFKA_PROPS (admin). 77 without them.

usage: blackbox_secure_cluster.py PATH/TO/kretry
"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import Cluster, check, props, run  # noqa: E402

KAFKA_SH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "scripts", "kafka.sh")


def login(user, how):
    r = subprocess.run(["sh", KAFKA_SH, "secure-props", user, how],
                       capture_output=True, timeout=60)
    check(r.returncode == 0, "kafka.sh secure-props %s %s" % (user, how))
    return [kv for kv in r.stdout.decode().splitlines() if kv]


def kcat(bootstrap, x, args, stdin=None):
    """kcat's exit status and all it said (a 5 s metadata bound)."""
    cmd = ["kcat", "-b", bootstrap, "-m", "5"]
    for kv in x:
        cmd += ["-X", kv]
    r = subprocess.run(cmd + args, input=stdin, capture_output=True,
                       timeout=60)
    return r.returncode, (r.stdout + r.stderr).decode(errors="replace")


def produce(bootstrap, x, topic):
    """A produce acknowledged by the cluster (or not): kcat waits for the
    delivery report and exits non-zero when it failed."""
    return kcat(bootstrap, x + ["message.timeout.ms=5000"],
                ["-P", "-t", topic, "-p", "0"], stdin=b"one\n")


def main():
    need = ("KRETRY_KAFKA_DIR", "KRETRY_TEST_BOOTSTRAP",
            "KRETRY_TEST_MTLS_BOOTSTRAP", "KRETRY_TEST_KAFKA_PROPS")
    if not all(os.environ.get(n) for n in need):
        print("SKIPPED: blackbox_secure_cluster needs the secured cluster "
              "of scripts/kafka.sh start --secure (%s)" % ", ".join(need))
        return 77
    b = os.environ["KRETRY_TEST_BOOTSTRAP"]
    ca = dict(props("KRETRY_TEST_KAFKA_PROPS"))["ssl.ca.location"]

    rc, out = kcat(b, [], ["-L"])
    check(rc != 0 and "brokers:" not in out,
          "an anonymous PLAINTEXT client gets no metadata (%s)" % out[-200:])
    rc, out = kcat(os.environ["KRETRY_TEST_MTLS_BOOTSTRAP"],
                   ["security.protocol=SSL", "ssl.ca.location=" + ca], ["-L"])
    check(rc != 0 and "brokers:" not in out,
          "a TLS client without a certificate gets no metadata (%s)"
          % out[-200:])
    wrong = [kv if not kv.startswith("sasl.password=") else
             "sasl.password=not-svc-secret" for kv in login("svc", "plain")]
    rc, out = kcat(b, wrong, ["-L"])
    check(rc != 0 and "brokers:" not in out and "uthentication" in out,
          "a wrong password is refused (%s)" % out[-200:])

    # One topic inside svc's prefix, one outside it (admin makes both).
    inside = Cluster({"orders": 1}).start(None)
    outside = Cluster({"orders": 1})
    outside.prefix = "open-"
    outside.start(None)
    try:
        ui = login("ui", "plain")
        rc, out = kcat(b, ui, ["-L", "-t", inside.name("orders")])
        check("authorization failed" in out.lower(),
              "ui, without ACLs, is not authorized for %s (%s)"
              % (inside.name("orders"), out[-200:]))
        rc, out = produce(b, ui, inside.name("orders"))
        check(rc != 0, "ui cannot write to it (%s)" % out[-200:])
        svc = login("svc", "plain")
        rc, out = produce(b, svc, inside.name("orders"))
        check(rc == 0, "svc writes to %s, inside its prefix (%s)"
              % (inside.name("orders"), out[-200:]))
        rc, out = produce(b, svc, outside.name("orders"))
        check(rc != 0, "svc cannot write to %s, outside it (%s)"
              % (outside.name("orders"), out[-200:]))
    finally:
        inside.kill()
        outside.kill()
    return 0


if __name__ == "__main__":
    run(main)
