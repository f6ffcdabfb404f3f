#!/usr/bin/python3
"""Black-box test of a bounded shutdown: `kretry run` on `kretry dev-broker`
with retries in flight; the broker process is killed and kretry gets one
SIGTERM at the same moment, as Kubernetes or systemd would send it. kretry
must exit within revoke.timeout.ms plus a few seconds — with status 1
when its close was cut short, 0 when everything was committed before —
not wait for the group coordinator for session.timeout.ms (45 s by
default) or forever.

usage: blackbox_shutdown.py PATH/TO/kretry
Exit 0 on success, 1 on failure, 77 (skipped) when kcat is missing or
KRETRY_TEST_BOOTSTRAP names a real cluster (the test kills its broker).
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import chain, check, group_x, kcat, mock_only  # noqa: E402
from blackbox_run import Setup, wait_for  # noqa: E402

REVOKE_MS = 2000
# kretry's own bound is revoke.timeout.ms + 5 s; the rest is room for a
# loaded CI machine. librdkafka alone waits session.timeout.ms (45 s here).
BOUND_S = REVOKE_MS / 1000 + 5 + 6

# Every message is retried: copies to the tiers are always on their way.
HANDLER = 'echo "attempt=$KRETRY_ATTEMPT" >> "$LOG"; exit 75\n'


def main():
    mock_only("blackbox_shutdown",
              "the test kills the broker process together with kretry's "
              "SIGTERM",
              "blackbox_broker_gone, on a broker of its own, hung "
              "(SIGSTOP) and dead (SIGKILL) at the SIGTERM")
    s = Setup(__doc__, HANDLER, chain("orders", 1, 2))
    if s.status is not None:
        return s.status
    run = None
    try:
        b = s.broker.bootstrap
        kcat(b, ["-P", "-t", "orders", "-p", "0", "-K", ":"],
             stdin=b"".join(b"k%d:v%d\n" % (i, i) for i in range(20)))
        run = subprocess.Popen(
            [s.cli, "run", *group_x(), "--bootstrap", b, "--source", "orders",
             "--group", "bb-shutdown", "--tiers", "100ms,200ms",
             "--max-attempts", "1000", "--jitter", "0",
             "-X", "socket.nagle.disable=true",
             "-X", "consumer.fetch.wait.max.ms=10",
             "-X", "revoke.timeout.ms=%d" % REVOKE_MS,
             "--exec", "sh " + s.handler],
            env=dict(os.environ, LOG=s.log), stderr=s.run_err)
        lines = wait_for(s.log, 40, 30)
        check(len(lines) >= 40, "retries under way (%d handler calls)" %
              len(lines))
        s.broker.kill_broker()
        run.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        try:
            rc = run.wait(timeout=BOUND_S + 30)
        except subprocess.TimeoutExpired:
            rc = None
        took = time.monotonic() - t0
        check(rc is not None and took < BOUND_S,
              "one SIGTERM with the broker gone: exited after %.1fs "
              "(bound %.0fs)" % (took, BOUND_S))
        # Exit 1 when the close was cut short (a commit or copies left for
        # a coordinator that does not answer); 0 when everything decided
        # was committed before the broker went (the periodic commit every
        # 100 ms): nothing is left to wait for then.
        cut = "cut short" in s.run_stderr()
        check(rc == (1 if cut else 0),
              "exit %s, the log %s the close was cut short" %
              (rc, "says" if cut else "does not say"))
    except Exception as e:
        print("FAIL:", e)
        print("--- kretry run stderr (tail) ---\n" + s.run_stderr()[-4000:])
        return 1
    finally:
        s.cleanup(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
