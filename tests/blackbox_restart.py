#!/usr/bin/python3
"""Black-box test of a clean stop and a restart: `kretry run` on `kretry
dev-broker` (or the real cluster in KRETRY_TEST_BOOTSTRAP, bbkafka.py)
handles a flow in which some keys fail once (so they go through a tier),
gets a SIGTERM mid-flow, exits 0, and a second `kretry run` of the same
group finishes the flow. Nothing the first one decided (handled OK, or
copied to a tier) may be handled again by the second: 0 repeats, whatever
the ordering. Every message still reaches OK (nothing lost), and with
ordering=key each key's messages are handled OK in their order.

usage: blackbox_restart.py PATH/TO/kretry none|partition|key
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

MESSAGES = 600
KEYS = 40
PARTITIONS = 2

# The value is "<id>:<key>"; keys divisible by 5 fail their first attempt
# of every message (through the tier), keys 7 and 8 are slow (their later
# messages wait behind them while other keys overtake). One line per call:
# id, attempt, topic.
HANDLER = r"""
v=$(cat)
echo "${v%%:*} $KRETRY_ATTEMPT $KRETRY_TOPIC" >> "$LOG"
case "${v#*:}" in
*[05]) [ "$KRETRY_ATTEMPT" -ge 2 ] || exit 75 ;;
7|8) sleep 0.2 ;;
esac
exit 0
"""


def fails_once(key):
    return key % 5 == 0


def read_calls(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [tuple(l.split()[:3]) for l in f.read().splitlines()
                if len(l.split()) >= 3]


def oks(calls):
    """The ids handled OK: attempt 2 of a key that fails once, else 1."""
    done = set()
    for mid, attempt, _ in calls:
        key = int(mid) % KEYS
        if int(attempt) >= (2 if fails_once(key) else 1):
            done.add(int(mid))
    return done


def start(s, ordering, log):
    b = s.broker.bootstrap
    return subprocess.Popen(
        [s.cli, "run", "--bootstrap", b, "--source",
         s.broker.name("orders"), "--group", s.broker.group("bb-restart"),
         "--tiers", "300ms", "--max-attempts", "5", "--jitter", "0",
         "--concurrency", "4", "-X", "ordering=" + ordering] + MOCK_X +
        ["--exec", "sh " + s.handler],
        env=dict(os.environ, LOG=log), stderr=s.run_err)


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("none", "partition", "key"):
        print(__doc__)
        return 2
    ordering = sys.argv.pop()
    t0 = time.monotonic()
    s = Setup(__doc__, HANDLER, chain("orders", PARTITIONS, 1))
    if s.status is not None:
        return s.status
    run = None
    log1, log2 = s.log + ".1", s.log + ".2"
    try:
        b = s.broker.bootstrap
        # Message i has key i % KEYS: each key's messages in id order on
        # one partition.
        for p in range(PARTITIONS):
            kcat(b, ["-P", "-t", s.broker.name("orders"), "-p", str(p), "-K",
                     ":"],
                 stdin=b"".join(b"k%d:%d:%d\n" % (i % KEYS, i, i % KEYS)
                                for i in range(MESSAGES)
                                if (i % KEYS) % PARTITIONS == p))
        run = start(s, ordering, log1)
        first = wait_for(log1, MESSAGES // 3, 60)
        check(len(first) >= MESSAGES // 3,
              "first run under way (%d calls)" % len(first))
        run.send_signal(signal.SIGTERM)
        rc = run.wait(timeout=60)
        run = None
        check(rc == 0, "SIGTERM: exit 0 (got %s)" % rc)
        calls1 = read_calls(log1)
        done1 = oks(calls1)
        check(len(done1) < MESSAGES,
              "stopped mid-flow: %d of %d handled OK" % (len(done1),
                                                         MESSAGES))
        t1 = time.monotonic()
        run = start(s, ordering, log2)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if len(done1 | oks(read_calls(log2))) == MESSAGES:
                break
            time.sleep(0.2)
        took = time.monotonic() - t1
        time.sleep(1)  # anything handled twice shows up too
        calls2 = read_calls(log2)
        check(len(done1 | oks(calls2)) == MESSAGES,
              "every message handled OK across both runs (%d of %d), the "
              "restart in %.1fs" % (len(done1 | oks(calls2)), MESSAGES, took))
        seen = {}
        for c in calls1 + calls2:
            seen[(c[0], c[1])] = seen.get((c[0], c[1]), 0) + 1
        again = [c for c in calls2 if (c[0], c[1]) in
                 {(x[0], x[1]) for x in calls1}]
        twice = sorted(k for k, n in seen.items() if n > 1)
        from_source = [c for c in again if c[2] == s.broker.name("orders")]
        print("# ordering=%s: first run %d calls, second %d, repeated %d "
              "(%d from the source)" % (ordering, len(calls1), len(calls2),
                                        len(again), len(from_source)))
        check(not twice, "0 repeats after a clean stop (%d handled twice, "
              "first: %s)" % (len(twice), twice[:5]))
        if ordering == "key":
            for k in range(KEYS):
                ids = [int(c[0]) for c in calls1 + calls2
                       if int(c[0]) % KEYS == k and
                       int(c[1]) >= (2 if fails_once(k) else 1)]
                check(ids == sorted(ids), "key %d handled OK in order" % k)
        run.send_signal(signal.SIGTERM)
        check(run.wait(timeout=60) == 0, "second run: exit 0")
        run = None
    except Exception as e:
        print("FAIL:", e)
        print("--- kretry run stderr (tail) ---\n" + s.run_stderr()[-6000:])
        return 1
    finally:
        s.cleanup(run)
    print("# blackbox_restart %s: %.1fs" % (ordering, time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
