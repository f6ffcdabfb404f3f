#!/usr/bin/python3
"""Black-box test of the stop bound on real Kafka, whatever the cluster
does: `kretry run` with retries in flight gets one SIGTERM the moment its
only broker is hung (SIGSTOP: connections open, nothing answered) and,
in a second round, the moment it is dead (SIGKILL). Each time kretry must
exit within revoke.timeout.ms + 5 s (README, "Stops, restarts and kills")
with status 1, saying its stop was cut short, or with 0 when nothing was
left to commit or acknowledge when the broker went.

The test starts a broker of its own (scripts/kafka.sh, one node, on
KRETRY_KAFKA_PORT + 20, 19112 in CI, its data in a temporary directory):
the shared one is not the test's to stop. It runs where
KRETRY_TEST_BOOTSTRAP names a real cluster, i.e. in scripts/test.sh's real
passes, under both group protocols.

usage: blackbox_broker_gone.py PATH/TO/kretry
Exit 0 on success, 1 on failure, 77 (skipped) without a real cluster
(then no Java broker can be assumed either) or kcat.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bbkafka  # noqa: E402
from bbkafka import chain, check, group_x, kcat, real_bootstrap  # noqa: E402
from blackbox_run import Setup, wait_for  # noqa: E402

REVOKE_MS = 2000
# kretry's own bound is revoke.timeout.ms + 5 s; 3 s more is room for a
# loaded machine (the process's own exit, the guard). librdkafka alone
# waits session.timeout.ms (45 s by default) or, for a hung broker, its
# request timeouts.
BOUND_S = REVOKE_MS / 1000 + 5 + 3

# Every message is retried: copies to the tiers are always on their way.
HANDLER = 'echo "attempt=$KRETRY_ATTEMPT" >> "$LOG"; exit 75\n'

KAFKA_SH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "scripts", "kafka.sh")


class OwnBroker:
    """One Kafka node of the test's own, stopped (and its data dropped)
    by stop()."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="kretry-gone-")
        port = int(os.environ.get("KRETRY_KAFKA_PORT", "19092")) + 20
        self.env = dict(os.environ, KRETRY_KAFKA_DIR=self.dir,
                        KRETRY_KAFKA_PORT=str(port))
        r = subprocess.run([KAFKA_SH, "start"], env=self.env,
                           capture_output=True, timeout=180)
        if r.returncode != 0:
            raise AssertionError("kafka.sh start: %s" %
                                 r.stderr.decode(errors="replace")[-2000:])
        self.bootstrap = r.stdout.decode().strip().splitlines()[-1]
        with open(os.path.join(self.dir, "node1", "pid")) as f:
            self.pid = int(f.read())

    def signal(self, sig):
        os.kill(self.pid, sig)

    def stop(self):
        try:
            os.kill(self.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        subprocess.run([KAFKA_SH, "stop"], env=self.env,
                       capture_output=True, timeout=120)


def calls(path):
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return len(f.read().splitlines())


def stop_round(s, own, sig, group):
    """Retries in flight, then @sig to the broker and SIGTERM to kretry at
    once: kretry's exit status, and how long it took."""
    b = own.bootstrap
    before = calls(s.log)
    kcat(b, ["-P", "-t", s.broker.name("orders"), "-p", "0", "-K", ":"],
         stdin=b"".join(b"k%d:v%d\n" % (i, i) for i in range(20)))
    err = open(os.path.join(s.tmp.name, "run-%s.err" % group), "w+b")
    run = subprocess.Popen(
        [s.cli, "run",
         *group_x("consumer.session.timeout.ms=6000",
                  "consumer.heartbeat.interval.ms=500"),
         "--bootstrap", b, "--source", s.broker.name("orders"),
         "--group", s.broker.group(group), "--tiers", "100ms,200ms",
         "--max-attempts", "1000", "--jitter", "0",
         "-X", "socket.nagle.disable=true",
         "-X", "consumer.fetch.wait.max.ms=10",
         "-X", "revoke.timeout.ms=%d" % REVOKE_MS,
         "--exec", "sh " + s.handler],
        env=dict(os.environ, LOG=s.log), stderr=err)
    try:
        lines = wait_for(s.log, before + 40, 60)
        check(len(lines) >= before + 40, "%s round: retries under way (%d "
              "handler calls)" % (sig.name, len(lines) - before))
        own.signal(sig)
        run.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        try:
            rc = run.wait(timeout=BOUND_S + 20)
        except subprocess.TimeoutExpired:
            rc = None
        took = time.monotonic() - t0
        text = bbkafka.file_text(err)
        print("# broker %s: kretry run exited %s after %.2f s" %
              (sig.name, rc, took))
        if rc is None or took >= BOUND_S or rc != 1 or \
                "timed out while stopping" not in text:
            print("--- kretry run stderr (tail) ---\n" + text[-4000:])
        check(rc is not None and took < BOUND_S,
              "broker %s, one SIGTERM: exited after %.1f s (bound %.0f s)"
              % (sig.name, took, BOUND_S))
        # Exit 1, saying so, when the stop was cut short: a copy or a
        # commit was left for the gone broker. Exit 0 only when nothing
        # was: every decision committed before the broker went (seen under
        # the consumer protocol, whose leave waits 1 s, when no call had
        # ended since the last commit), and then no commit was refused.
        cut = "timed out while stopping" in text
        check(rc == 1 if cut else rc == 0 and "not committed" not in text,
              "broker %s: exit %s, the log %s the stop was cut short"
              % (sig.name, rc, "says" if cut else "does not say"))
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(timeout=10)


def main():
    if not real_bootstrap():
        print("SKIPPED: blackbox_broker_gone needs real Kafka "
              "(KRETRY_TEST_BOOTSTRAP set: scripts/kafka.sh can start a "
              "broker of its own); on the mock: blackbox_shutdown, "
              "it_faults test_close_cluster_gone")
        return 77
    own = OwnBroker()
    s = None
    try:
        os.environ[bbkafka.ENV] = own.bootstrap
        s = Setup(__doc__, HANDLER, chain("orders", 1, 2))
        if s.status is not None:
            return s.status
        # A hung broker first: continued, it serves the second round.
        stop_round(s, own, signal.SIGSTOP, "bb-hung")
        own.signal(signal.SIGCONT)
        stop_round(s, own, signal.SIGKILL, "bb-dead")
        s.broker.created = []  # nothing left to delete them from
    except Exception as e:
        print("FAIL:", e)
        return 1
    finally:
        if s is not None and s.status is None:
            s.broker.created = []
            s.cleanup(None)
        own.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
