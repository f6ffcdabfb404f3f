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
or in the DLQ). Each kill landed with a transaction open: what the tier and
the DLQ held right after it (read read_uncommitted) includes copies of the
killed instance that never become visible read_committed, though it logged
no abort of its own. The handler itself may have run a message more than once:
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
from bbkafka import (chain, check, file_text, group_x, kcat,  # noqa: E402
                     real_bootstrap)
from blackbox_run import Setup  # noqa: E402

MESSAGES = 400
PARTITIONS = 2
TOPICS = ("orders.retry.1", "orders.dlq")

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


def records(s, topic, isolation, timeout):
    """{(partition, offset): id} of @topic's records read with @isolation
    (read_committed or read_uncommitted), within @timeout seconds."""
    out = kcat(s.broker.bootstrap,
               ["-C", "-t", s.broker.name(topic), "-o", "beginning", "-e",
                "-X", "isolation.level=" + isolation, "-f", "%p %o %s\\n"],
               timeout=timeout)
    recs = {}
    for line in out.splitlines():
        f = line.split(" ", 2)
        if len(f) == 3 and ":" in f[2]:
            recs[(int(f[0]), int(f[1]))] = int(f[2].split(":")[0])
    return recs


def copies(s, topic, timeout):
    """The ids of @topic's records read read_committed, in a Counter."""
    return collections.Counter(
        records(s, topic, "read_committed", timeout).values())


def written(s, timeout):
    """Every record of the tier and the DLQ, in a transaction or not:
    {(topic, partition, offset)}."""
    return {(t, p, o) for t in TOPICS
            for (p, o) in records(s, t, "read_uncommitted", timeout)}


def still_hidden(s, recs, hidden_before, settle=5):
    """The copies of @recs not readable read_committed (nor among
    @hidden_before) once a transaction whose commit the broker accepted
    before the kill has had @settle seconds to become visible: its markers
    are written after the commit is accepted (milliseconds; seconds on a
    loaded machine), so a copy missing right after the kill may be in a
    transaction that commits. What stays hidden was in one left open."""
    deadline = time.monotonic() + settle
    while True:
        now = {(t, p, o) for t in TOPICS for (p, o) in
               records(s, t, "read_committed", 15)}
        hidden = recs - now - hidden_before
        if not hidden or time.monotonic() >= deadline:
            return hidden
        time.sleep(0.2)


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
        at_kill = []  # what the tier and the DLQ held after each kill
        hidden_before = set()  # open at an earlier kill, never visible
        for at in (MESSAGES // 4, MESSAGES // 2):
            # A kill may fall between two transactions (one every 200 ms):
            # then the instance is started and killed again, 20 calls on,
            # until a kill leaves copies of an open transaction behind
            # (written, not readable read_committed right after it).
            for again in range(4):
                err = open(os.path.join(s.tmp.name, "run%d.err" % kills),
                           "w+b")
                run = start(s, err)
                n = at + 20 * again
                check(wait_calls(s.log, n, 120),
                      "instance %d handled %d calls" % (kills + 1, n))
                run.send_signal(signal.SIGKILL)
                run.wait(timeout=10)
                # Nothing writes now: the killed instance's copies are all
                # there, the next one has not started.
                recs = written(s, 15)
                open_now = still_hidden(s, recs, hidden_before)
                kills += 1
                if open_now:
                    break
                print("# kill %d fell between two transactions: again" %
                      kills)
            hidden_before |= open_now
            at_kill.append((recs, file_text(err)))
        err = open(os.path.join(s.tmp.name, "last.err"), "w+b")
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
        # Each kill landed with a transaction open: a copy the killed
        # instance wrote is never visible read_committed though the
        # instance aborted nothing (kretry logs every abort), so the
        # transaction it was in was open when the kill came (the broker
        # aborted it later: the last instance has read past it).
        visible = {(t, p, o) for t in TOPICS for (p, o) in
                   records(s, t, "read_committed", 15)}
        before = set()
        for k, (recs, text) in enumerate(at_kill):
            hidden = recs - before - visible
            print("# kill %d: %d copies written by the instance, %d of them "
                  "never visible" % (k + 1, len(recs - before), len(hidden)))
            check("transaction aborted" not in text,
                  "instance %d aborted no transaction of its own" % (k + 1))
            check(hidden, "kill %d landed with a transaction open (%d copies "
                  "in it, aborted)" % (k + 1, len(hidden)))
            before = recs
        # Let the last instance commit its last transaction, then stop it.
        run.send_signal(signal.SIGTERM)
        rc = run.wait(timeout=60)
        if rc != 0:
            print("--- last kretry run stderr (tail) ---\n" +
                  file_text(err)[-3000:])
        check(rc == 0, "SIGTERM: exit 0 (got %s)" % rc)
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
