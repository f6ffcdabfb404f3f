#!/usr/bin/python3
"""Black-box test of a clean stop and a restart: `kretry run` on `kretry
dev-broker` (or the real cluster in KRETRY_TEST_BOOTSTRAP, bbkafka.py)
handles a flow in which some keys fail once (so they go through a tier),
gets a SIGTERM mid-flow, and a second `kretry run` of the same group
finishes the flow. The first run's stop leaves offsets decided above the
lowest undecided one of a partition, so that its commit must carry them in
its metadata (kretry-decided ranges, read here from outside with
kafka-python): under none and key a handler call outlives the stop's
revoke.timeout.ms while other messages (none: other workers; key: other
keys) are decided above it, and the stop, cut short by it, exits 1 (with
no copy left unacknowledged); under partition, where
one message of a partition runs at a time, the copies of the retried
messages stay unacknowledged (producer.linger.ms far beyond the stop's
bound: a broker slow to acknowledge) while the messages behind them are
handled OK, and the stop, cut short by them, exits 1. Every source message
the first run handled OK must be in its commit (below the offset or in
the metadata), and the second run must handle none of them: 0 repeats of
anything decided, whatever the ordering. Every message still reaches OK
(nothing lost), and with ordering=key each key's messages are handled OK
in their order.

With "leave" instead of an ordering, two members share the group and one
gets a SIGTERM: its close must leave the group at once (LeaveGroup), so
the member that stays is given every partition well before the stopped
member's session could have timed out, and a restarted member is given
partitions again. (The mock cluster, kretry dev-broker, waits
session.timeout.ms - 1 s after any member leaves or joins a running group,
the leave included; a member that vanished without leaving costs a whole
session timeout more.)

usage: blackbox_restart.py PATH/TO/kretry none|partition|key|leave
Exit 0 on success, 1 on failure, 77 (skipped) when kcat is missing.
"""
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import (DECIDED, chain, check, committed,  # noqa: E402
                     decided_above, group_x, kcat)
from blackbox_run import MOCK_X, Setup, wait_for  # noqa: E402

MESSAGES = 600
KEYS = 40
PARTITIONS = 2

# The value is "<id>:<key>"; keys divisible by 5 fail their first attempt
# of every message (through the tier), keys 7 and 8 are slow (their later
# messages wait behind them while other keys overtake), and message SLOW_ID
# (set for the first run only) outlives the stop, while LATE_ID's first
# attempt returns RETRY once the stop began (its copy produced while the
# stop waits for SLOW_ID). One line per call that
# returns, written as it returns: id, attempt, topic, partition, offset,
# outcome.
HANDLER = r"""
v=$(cat)
id=${v%%:*}
at="$id $KRETRY_ATTEMPT $KRETRY_TOPIC $KRETRY_PARTITION $KRETRY_OFFSET"
[ "$id" = "${SLOW_ID-}" ] && { : > "$LOG.slow"; sleep 60; }
if [ "$id" = "${LATE_ID-}" ]; then
  : > "$LOG.late"
  while [ ! -e "$LOG.stop" ]; do sleep 0.05; done
fi
case "${v#*:}" in
*[05]) [ "$KRETRY_ATTEMPT" -ge 2 ] ||
       { echo "$at retry" >> "$LOG"; exit 75; } ;;
7|8) sleep 0.2 ;;
esac
echo "$at ok" >> "$LOG"
exit 0
"""

# Key 1 (partition 1): neither failing nor slow; the 21st message of its
# partition, started well before the stop.
SLOW_ID = 41
# Key 5 (partition 1, failing once), two messages later.
LATE_ID = 45
# The first run's stop bound: above a 0.2 s call on a loaded machine.
REVOKE_MS = 3000


def fails_once(key):
    return key % 5 == 0


def read_calls(path):
    """(id, attempt, topic, partition, offset, outcome) of each call."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [(int(c[0]), int(c[1]), c[2], int(c[3]), int(c[4]), c[5])
                for c in (l.split() for l in f.read().splitlines())
                if len(c) == 6]


def oks(calls):
    """The ids handled OK."""
    return {c[0] for c in calls if c[5] == "ok"}


def start(s, ordering, log, first):
    """kretry run; the @first one with its stop's condition: SLOW_ID
    outliving the stop (none, key) or copies never acknowledged
    (partition)."""
    b = s.broker.bootstrap
    env = dict(os.environ, LOG=log)
    env.pop("SLOW_ID", None)
    env.pop("LATE_ID", None)
    extra = []
    if first:
        extra = ["-X", "revoke.timeout.ms=%d" % REVOKE_MS]
        if ordering == "partition":
            extra += ["-X", "producer.linger.ms=60000"]
        else:
            env["SLOW_ID"] = str(SLOW_ID)
            env["LATE_ID"] = str(LATE_ID)
    return subprocess.Popen(
        [s.cli, "run", "--bootstrap", b, "--source",
         s.broker.name("orders"), "--group", s.broker.group("bb-restart"),
         "--tiers", "300ms", "--max-attempts", "5", "--jitter", "0",
         "--concurrency", "4", "-X", "ordering=" + ordering] + MOCK_X +
        extra + ["--exec", "sh " + s.handler],
        env=env, stderr=s.run_err)


SESSION_MS = 10000
LEAVE_H = "cat > /dev/null; echo x >> \"$LOG\"; exit 0\n"


def member(s, log, err):
    """A kretry run member of the leave test, --verbose (its assignments),
    with a session timeout the test can tell from a leave."""
    b = s.broker.bootstrap
    return subprocess.Popen(
        [s.cli, "run", "--bootstrap", b, "--source", s.broker.name("orders"),
         "--group", s.broker.group("bb-leave"), "--tiers", "1s", "--verbose",
         "-X", "socket.nagle.disable=true",
         "-X", "consumer.fetch.wait.max.ms=10",
         *group_x("consumer.session.timeout.ms=%d" % SESSION_MS,
                  "consumer.heartbeat.interval.ms=500"),
         "--exec", "sh " + s.handler],
        env=dict(os.environ, LOG=log), stderr=err)


def assigned_parts(path):
    """The source partitions @path's member holds now, from its log."""
    held = set()
    with open(path, errors="replace") as f:
        for line in f:
            m = re.search(r"REBALANCE: (assigned|revoking) \d+ partition\(s\):"
                          r"(.*)", line)
            if not m:
                continue
            parts = set(re.findall(r"(?:^| )orders[^ .]*\[(\d+)\]",
                                   m.group(2)))
            held = held | parts if m.group(1) == "assigned" else held - parts
    return held


def wait_parts(path, want, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if assigned_parts(path) >= want:
            return True
        time.sleep(0.05)
    return False


def leave():
    s = Setup(__doc__, LEAVE_H, chain("orders", 4, 1))
    if s.status is not None:
        return s.status
    procs = []
    errs = [os.path.join(s.tmp.name, n) for n in ("a", "b", "a2")]
    files = [open(e, "wb") for e in errs]
    every = {"0", "1", "2", "3"}
    try:
        kcat(s.broker.bootstrap, ["-P", "-t", s.broker.name("orders"), "-K",
                                  ":"],
             stdin=b"".join(b"k%d:v%d\n" % (i, i) for i in range(40)))
        procs.append(member(s, s.log, files[0]))
        check(wait_parts(errs[0], every, 60), "first member: every partition")
        procs.append(member(s, s.log, files[1]))
        # Cooperative: the second member is given its share without the
        # first one stopping.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not (
                assigned_parts(errs[1]) and
                assigned_parts(errs[0]) | assigned_parts(errs[1]) == every):
            time.sleep(0.05)
        check(assigned_parts(errs[1]), "second member: its share (%s)" %
              sorted(assigned_parts(errs[1])))
        t0 = time.monotonic()
        procs[0].send_signal(signal.SIGTERM)
        check(procs[0].wait(timeout=30) == 0, "SIGTERM: exit 0")
        # A leave: the mock rebalances session.timeout.ms - 1 s later, a
        # broker at once; without one the group first waits for the
        # stopped member's session to time out.
        bound = SESSION_MS / 1000.0 + (3 if s.broker.broker else 0)
        ok = wait_parts(errs[1], every, bound + 30)
        took = time.monotonic() - t0
        check(ok and took < bound,
              "the member that stayed holds every partition %.1fs after the "
              "other's SIGTERM (bound %.0fs: the stopped member left the "
              "group, it did not time out)" % (took, bound))
        procs.append(member(s, s.log, files[2]))
        t1 = time.monotonic()
        check(_any_parts(errs[2], bound + 30),
              "the restarted member is given partitions again (%.1fs)" %
              (time.monotonic() - t1))
    except Exception as e:
        print("FAIL:", e)
        for n, e in zip(("a", "b", "a2"), errs):
            with open(e, errors="replace") as f:
                tail = [l for l in f if "REBALANCE" in l or "CLOSE" in l]
            print("--- %s (rebalances) ---\n%s" % (n, "".join(tail[-10:])))
        return 1
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        s.cleanup(None)
    return 0


def _any_parts(path, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if assigned_parts(path):
            return True
        time.sleep(0.05)
    return False


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("none", "partition", "key",
                                                  "leave"):
        print(__doc__)
        return 2
    ordering = sys.argv.pop()
    if ordering == "leave":
        return leave()
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
        run = start(s, ordering, log1, True)
        first = wait_for(log1, MESSAGES // 3, 60)
        check(len(first) >= MESSAGES // 3,
              "first run under way (%d calls)" % len(first))
        if ordering != "partition":
            deadline = time.monotonic() + 30
            while not (os.path.exists(log1 + ".slow") and
                       os.path.exists(log1 + ".late")) and \
                    time.monotonic() < deadline:
                time.sleep(0.05)
            check(os.path.exists(log1 + ".slow") and
                  os.path.exists(log1 + ".late"),
                  "the calls of messages %d and %d run" % (SLOW_ID, LATE_ID))
        run.send_signal(signal.SIGTERM)
        # LATE_ID returns RETRY during the stop: its copy must be
        # acknowledged and its offset committed though the stop spends its
        # whole bound waiting for SLOW_ID.
        with open(log1 + ".stop", "w"):
            pass
        rc = run.wait(timeout=60)
        run = None
        # The stop was cut short at its bound, by the call of SLOW_ID
        # still running (none, key) or by the copies left unacknowledged
        # (partition): exit 1 (README, kretry run --help).
        check(rc == 1, "SIGTERM cut short at its bound: exit 1 (got %s)" % rc)
        if ordering != "partition":
            # LATE_ID's copy was acknowledged within the bound.
            check("still unacknowledged" not in s.run_stderr(),
                  "no copy left unacknowledged by the stop")
        calls1 = read_calls(log1)
        done1 = oks(calls1)
        check(len(done1) < MESSAGES,
              "stopped mid-flow: %d of %d handled OK" % (len(done1),
                                                         MESSAGES))
        # What the stop committed, read from outside: each source
        # partition's offset and the offsets decided above it.
        source = s.broker.name("orders")
        group = s.broker.group("bb-restart")
        commit = committed(b, group, source, range(PARTITIONS))
        decided = {p: set(range(max(off, 0))) | decided_above(off, md)
                   for p, (off, md) in commit.items()}
        print("# the stop's commit: %s" % ", ".join(
            "[%d] %d %r" % (p, off, md[:60])
            for p, (off, md) in sorted(commit.items())))
        check(any(md.startswith(DECIDED) for _, md in commit.values()),
              "the stop's commit carries the offsets decided above it "
              "(kretry-decided metadata)")
        missing = [c for c in calls1 if c[2] == source and c[5] == "ok" and
                   c[4] not in decided[c[3]]]
        check(not missing, "every source message the first run handled OK "
              "is in its commit, below the offset or in the metadata (%d "
              "not, first: %s)" % (len(missing), missing[:3]))
        if ordering != "partition":
            # (Under key it may be handled from the tier, behind its key's
            # retry: then the restart must not handle it again, below.)
            late = [c for c in calls1 if c[0] == LATE_ID]
            check(late and late[-1][5] == "retry" and
                  (late[-1][2] != source or
                   late[-1][4] in decided[late[-1][3]]),
                  "message %d, retried during the stop, is committed (its "
                  "copy acknowledged within the bound): %s" % (LATE_ID, late))
        t1 = time.monotonic()
        run = start(s, ordering, log2, False)
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
        honoured = [c for c in calls2 if c[2] == source and
                    c[4] in decided[c[3]]]
        check(not honoured, "the second run handles no source message the "
              "commit says was decided (%d handled, first: %s)" %
              (len(honoured), honoured[:3]))
        # Decided in the first run: what returned OK, and a retry whose
        # source offset the commit holds (its copy acknowledged; under
        # partition the unacknowledged ones are handled again).
        decided1 = {(c[0], c[1]) for c in calls1 if c[5] == "ok" or
                    c[2] != source or c[4] in decided[c[3]]}
        seen = {}
        for c in calls1 + calls2:
            seen[(c[0], c[1])] = seen.get((c[0], c[1]), 0) + 1
        again = [c for c in calls2 if (c[0], c[1]) in decided1]
        twice = sorted(k for k, n in seen.items()
                       if n > 1 and (k in decided1 or n > 2))
        from_source = [c for c in again if c[2] == source]
        print("# ordering=%s: first run %d calls, second %d, repeated %d "
              "(%d from the source)" % (ordering, len(calls1), len(calls2),
                                        len(again), len(from_source)))
        check(not twice, "0 repeats of anything decided after the stop (%d "
              "handled twice, first: %s)" % (len(twice), twice[:5]))
        if ordering == "key":
            out_of_order = []
            for k in range(KEYS):
                ids = [c[0] for c in calls1 + calls2
                       if c[0] % KEYS == k and c[5] == "ok"]
                if ids != sorted(ids):
                    out_of_order.append(k)
            check(not out_of_order, "each key handled OK in order (out of "
                  "order: %s)" % out_of_order)
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
