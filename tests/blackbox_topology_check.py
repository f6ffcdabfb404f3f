#!/usr/bin/python3
"""Black-box test of `kretry run`'s topology check on `kretry dev-broker`
(or the real cluster in KRETRY_TEST_BOOTSTRAP, bbkafka.py): a chain that
does not fit is refused before anything is consumed, exit 1, with the
problem and the fix on stderr, and the check creates no topic (the mock
cluster creates any topic a Metadata request names; the real pass's Kafka
has auto.create.topics.enable). kcat lists the cluster's topics.

  dlq        the DLQ is missing
  changelog  versioning is on and its changelog is missing
  compact    the changelog exists with delete cleanup: only on real Kafka
             (the mock cluster cannot answer DescribeConfigs, so kretry
             cannot tell the policy there and only warns); on the mock it
             exits 77 with a "SKIPPED:" line saying so (label real)

usage: blackbox_topology_check.py PATH/TO/kretry MODE
Exit 0 on success, 1 on failure, 77 (skipped) when kcat is missing.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import SKIP, Cluster, check, group_x  # noqa: E402

MODES = ("dlq", "changelog", "compact")


def topics(k):
    """Every topic the cluster lists (a Metadata request for all topics,
    which creates none)."""
    r = subprocess.run(["kcat", "-b", k.bootstrap, "-L"],
                       capture_output=True, timeout=15)
    out = r.stdout.decode(errors="replace")
    check(r.returncode == 0, "kcat -L lists the cluster's topics")
    return {l.split('"')[1] for l in out.splitlines()
            if l.strip().startswith("topic \"")}


def setup(mode):
    """The topics the mode creates and the ones kretry run is told about:
    ({logical name: partitions}, the -X settings, the missing or
    misconfigured topic's logical name, what stderr must say)."""
    chain = {"orders": 2, "orders.retry.1": 2}
    if mode == "dlq":
        return chain, [], "orders.dlq", "DLQ topic %s does not exist"
    chain["orders.dlq"] = 2
    x = ["-X", "versioning.header=version",
         "-X", "versioning.topic=%s"]  # the changelog's name, see main()
    if mode == "changelog":
        return (chain, x, "orders.versions",
                "version changelog topic %s does not exist")
    chain["orders.versions"] = 2  # created with delete cleanup
    return (chain, x, "orders.versions",
            "version changelog %s is not compacted: its cleanup.policy "
            "must be compact")


def run(cli, k, x):
    """kretry run on the chain with the -X settings @x: its exit status and
    stderr. The check answers within its timeout (10 s) and 2 s more of
    looking again: a run still going after 20 s started, and is stopped
    (status None)."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [cli, "run", *group_x(), "--bootstrap", k.bootstrap,
             "--source", k.name("orders"), "--group", k.group("bb-check"),
             "--tiers", "200ms", "-X", "socket.nagle.disable=true"] + x +
            ["--exec", "true"], stderr=err)
        try:
            rc = proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            rc = None
        err.seek(0)
        return rc, err.read().decode(errors="replace")


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in MODES:
        print(__doc__)
        return 2
    if not shutil.which("kcat"):
        print("SKIP: kcat is not installed (Debian package kcat)")
        return SKIP
    cli, mode = sys.argv[1], sys.argv[2]
    if mode == "compact" and not os.environ.get("KRETRY_TEST_BOOTSTRAP"):
        print("SKIPPED: compact needs a real cluster in "
              "KRETRY_TEST_BOOTSTRAP: the mock cluster cannot answer "
              "DescribeConfigs, so kretry cannot tell the changelog's "
              "cleanup.policy there (it warns: "
              "it_topology_check.test_changelog_policy_unknown)")
        return SKIP
    t0 = time.monotonic()
    chain, x, bad, problem = setup(mode)
    k = Cluster(chain).start(cli)
    rc = 0
    try:
        bad = k.name(bad)
        problem = problem % bad
        x = [a % bad if "%s" in a else a for a in x]
        rc_run, err = run(cli, k, x)
        print("# kretry run stderr:\n" + err.rstrip())
        listed = topics(k)
        check(k.name("orders") in listed, "the cluster lists the source")
        if mode != "compact":
            check(bad not in listed, "the check did not create %s" % bad)
        check(rc_run == 1, "kretry run refuses to start with exit 1 (got %s)"
              % ("none: it started" if rc_run is None else rc_run))
        check(problem in err, "stderr names the problem: %s" % problem)
        check("run `kretry topology apply FILE`" in err,
              "stderr names the fix")
        check(".retry.1 " not in err, "the tier that fits is not reported")
        k.check_stop()
    except Exception as e:  # noqa: BLE001 - reported as the failure
        print("FAIL:", e)
        print("--- dev-broker stderr ---\n" + k.stderr_text())
        rc = 1
    finally:
        k.kill()
    print("# blackbox_topology_check %s: %.1fs" %
          (mode, time.monotonic() - t0))
    return rc


if __name__ == "__main__":
    sys.exit(main())
