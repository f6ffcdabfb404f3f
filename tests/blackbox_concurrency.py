#!/usr/bin/python3
"""Black-box test of `kretry run --concurrency` on `kretry dev-broker` (or
the real cluster in KRETRY_TEST_BOOTSTRAP, bbkafka.py): a
shell handler that takes 0.6 s logs when each call starts and ends; eight
keys run up to four commands at once, and the four messages of one key
(ordering=key) never overlap and keep their order.

usage: blackbox_concurrency.py PATH/TO/kretry
Exit 0 on success, 1 on failure, 77 (skipped) when kcat is missing.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import chain, check, kcat  # noqa: E402
from blackbox_run import MOCK_X, Setup, wait_for  # noqa: E402

HANDLER = r"""
v=$(cat)
echo "start $KRETRY_KEY $v $(date +%s.%N)" >> "$LOG"
sleep 0.6
echo "end $KRETRY_KEY $v $(date +%s.%N)" >> "$LOG"
exit 0
"""

KEYS = ["k%d" % i for i in range(8)]


def most_at_once(events):
    """The most calls running at once, from (time, +1/-1) events."""
    now = best = 0
    for _, d in sorted(events):
        now += d
        best = max(best, now)
    return best


def check_ends(log, when):
    """Every message's value ends exactly once in @log: 12 end lines that
    are 12 different messages, not one twice and another never."""
    got = sorted(l.split()[2] for l in log if l.startswith("end "))
    want = sorted(KEYS + [str(i) for i in range(4)])
    check(got == want, "every message handled once%s: missing %s, twice "
          "or more %s (%d ends)" %
          (when, sorted(set(want) - set(got)),
           sorted({v for v in got if got.count(v) > 1}), len(got)))


def main():
    t0 = time.monotonic()
    s = Setup(__doc__, HANDLER, chain("orders", 1, 1))
    if s.status is not None:
        return s.status
    run = None
    try:
        b = s.broker.bootstrap
        lines = "".join("%s:%s\n" % (k, k) for k in KEYS)
        lines += "".join("same:%d\n" % i for i in range(4))
        kcat(b, ["-P", "-t", s.broker.name("orders"), "-p", "0", "-K", ":"],
             stdin=lines.encode())
        run = subprocess.Popen(
            [s.cli, "run", "--bootstrap", b,
             "--source", s.broker.name("orders"),
             "--group", s.broker.group("bb-conc"), "--tiers", "200ms",
             "--concurrency", "4",
             "-X", "ordering=key"] + MOCK_X + ["--exec", "sh " + s.handler],
            env=dict(os.environ, LOG=s.log), stderr=s.run_err)
        want = 2 * (len(KEYS) + 4)
        log = wait_for(s.log, want, 40)
        check_ends(log, "")
        events = [(float(l.split()[3]), 1 if l.startswith("start") else -1)
                  for l in log]
        n = most_at_once(events)
        check(2 <= n <= 4, "up to 4 commands at once (%d seen)" % n)
        same = [(float(l.split()[3]), 1 if l.startswith("start") else -1)
                for l in log if l.split()[1] == "same"]
        check(most_at_once(same) == 1, "one command of a key at a time")
        order = [l.split()[2] for l in log
                 if l.startswith("start same ")]
        check(order == ["0", "1", "2", "3"],
              "a key's messages in their order (%s)" % order)
        run.send_signal(signal.SIGTERM)
        rc = run.wait(timeout=15)
        check(rc == 0, "SIGTERM stops kretry run with exit 0 (got %d)" % rc)
        with open(s.log) as f:
            check_ends(f.read().splitlines(), " by the stop")
        s.broker.check_stop()
    except Exception as e:
        print("FAIL:", e)
        print("--- kretry run stderr ---\n" + s.run_stderr())
        print("--- dev-broker stderr ---\n" + s.broker.stderr_text())
        return 1
    finally:
        s.cleanup(run)
    print("# blackbox_concurrency: %.1fs" % (time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
