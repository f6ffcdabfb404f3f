#!/usr/bin/python3
"""Black-box test of `kretry run -X routing=transactional` killed mid-flow,
on the real cluster in KRETRY_TEST_BOOTSTRAP (the mock's transactions write
no markers: 77 there).

A flow of messages "<id>:<n>" in which every fourth fails (DLQ) and every
fourth after it fails once (a tier, then OK) runs through `kretry run
--exec` with transactions every 200 ms; it is SIGKILLed twice mid-flow,
each time with a transaction open, and restarted; a last instance finishes
the flow. Read back read_committed (kcat, librdkafka's default isolation),
every DLQ copy and every tier copy is there exactly once: nothing the
killed instances copied in their unfinished transactions appears, nothing
decided twice was copied twice. Every message reached its end (handled OK,
or in the DLQ). The handler itself may have run a message more than once:
that is what stays at least once.

usage: blackbox_txn_kill.py PATH/TO/kretry
Exit 0 on success, 1 on failure, 77 (skipped) without kcat or a real
cluster.
"""
import collections
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import chain, check, group_x, kcat, real_bootstrap  # noqa: E402
from blackbox_run import Setup  # noqa: E402

MESSAGES = 400
PARTITIONS = 2

# One line per call: id, attempt. id % 4 == 0 fails, == 1 fails once.
HANDLER = r"""
v=$(cat)
id=${v%%:*}
echo "$id $KRETRY_ATTEMPT" >> "$LOG"
case $((id % 4)) in
0) echo "bad $id" >&2; exit 3 ;;
1) [ "$KRETRY_ATTEMPT" -ge 2 ] || exit 75 ;;
esac
exit 0
"""


def calls(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.split() for l in f.read().splitlines() if len(l.split()) == 2]


def ended(lines):
    """The ids that reached their end in the handler: OK, or failed for
    good."""
    done = set()
    for mid, attempt in lines:
        i = int(mid)
        if i % 4 != 1 or int(attempt) >= 2:
            done.add(i)
    return done


def start(s, err):
    return subprocess.Popen(
        [s.cli, "run", "--bootstrap", s.broker.bootstrap, "--source",
         s.broker.name("orders"), "--group", s.broker.group("bb-txn"),
         "--tiers", "100ms", "--jitter", "0", "--concurrency", "4",
         "-X", "routing=transactional", "-X", "transaction.interval.ms=200",
         "-X", "socket.nagle.disable=true",
         "-X", "consumer.fetch.wait.max.ms=10",
         *group_x("consumer.session.timeout.ms=6000",
                  "consumer.heartbeat.interval.ms=500"),
         "--exec", "exec sh " + s.handler],
        env=dict(os.environ, LOG=s.log), stderr=err)


def copies(s, topic, timeout):
    """The ids of @topic's records read read_committed, in a Counter."""
    out = kcat(s.broker.bootstrap,
               ["-C", "-t", s.broker.name(topic), "-o", "beginning", "-e",
                "-X", "isolation.level=read_committed", "-f", "%s\\n"])
    return collections.Counter(int(l.split(":")[0]) for l in
                               out.splitlines() if ":" in l)


def wait_calls(path, n, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(calls(path)) >= n:
            return True
        time.sleep(0.05)
    return False


def main():
    if not real_bootstrap():
        print("SKIPPED: blackbox_txn_kill needs a real cluster in "
              "KRETRY_TEST_BOOTSTRAP: the mock cluster's transactions "
              "write no markers, so aborted copies would be read")
        return 77
    s = Setup(__doc__, HANDLER, chain("orders", PARTITIONS, 1))
    if s.status is not None:
        return s.status
    run = None
    try:
        kcat(s.broker.bootstrap, ["-P", "-t", s.broker.name("orders"), "-K",
                                  "|"],
             stdin=b"".join(b"k%d|%d:x\n" % (i % 40, i)
                            for i in range(MESSAGES)))
        kills = 0
        for at in (MESSAGES // 4, MESSAGES // 2):
            err = open(os.path.join(s.tmp.name, "run%d.err" % kills), "wb")
            run = start(s, err)
            check(wait_calls(s.log, at, 120),
                  "instance %d handled %d calls" % (kills + 1, at))
            run.send_signal(signal.SIGKILL)
            run.wait(timeout=10)
            kills += 1
        err = open(os.path.join(s.tmp.name, "last.err"), "wb")
        run = start(s, err)
        # A killed instance's open transaction holds the tiers' readers
        # back until the broker aborts it (transaction.timeout.ms, 10 s,
        # found by the broker's sweep): a generous bound.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and \
                len(ended(calls(s.log))) < MESSAGES:
            time.sleep(0.1)
        done = ended(calls(s.log))
        check(len(done) == MESSAGES, "every message reached its end in the "
              "handler (%d of %d)" % (len(done), MESSAGES))
        # Let the last instance commit its last transaction, then stop it.
        run.send_signal(signal.SIGTERM)
        check(run.wait(timeout=60) == 0, "SIGTERM: exit 0")
        dlq = copies(s, "orders.dlq", 15)
        tier = copies(s, "orders.retry.1", 15)
        want_dlq = {i for i in range(MESSAGES) if i % 4 == 0}
        want_tier = {i for i in range(MESSAGES) if i % 4 in (0, 1)} - want_dlq
        twice = sorted(i for i, n in list(dlq.items()) + list(tier.items())
                       if n > 1)
        check(set(dlq) == want_dlq, "the DLQ holds every failed message "
              "(%d of %d)" % (len(set(dlq) & want_dlq), len(want_dlq)))
        check(set(tier) == want_tier, "the tier holds every message that "
              "failed once (%d of %d)" % (len(set(tier) & want_tier),
                                          len(want_tier)))
        check(not twice, "no copy twice after %d SIGKILLs (%d twice: %s)"
              % (kills, len(twice), twice[:10]))
        repeats = len(calls(s.log)) - MESSAGES - len(want_tier)
        print("# %d handler calls repeated over %d kills" % (repeats, kills))
    except Exception as e:
        print("FAIL:", e)
        return 1
    finally:
        s.cleanup(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
