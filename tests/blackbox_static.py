#!/usr/bin/python3
"""Black-box test of a restart in place with static membership, on the
real cluster in KRETRY_TEST_BOOTSTRAP (the mock has no static membership:
77 there).

Two `kretry run` members, A then B, each with its own
consumer.group.instance.id and a session longer than a restart, share a
4-partition source. Once both hold partitions and a first batch is
handled, B gets a SIGTERM (a static member does not leave the group), a
second batch is produced while it is away, and B is started again under
the same id within the session timeout. Then:
- no rebalance reached A: its log has no assignment or revocation after
  the group settled, and it handled nothing of B's partitions;
- B came back to its own partitions and handled the second batch there;
- nothing was lost and nothing decided twice: every message handled
  exactly once (the handler answers OK).

usage: blackbox_static.py PATH/TO/kretry
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
                     real_bootstrap, wait_for)
from blackbox_run import Setup  # noqa: E402

PARTITIONS = 4
BATCH = 200
# Longer than a restart; under the consumer group protocol the broker's
# (6 s on the test cluster) applies.
SESSION_MS = 10000
RESTART_GAP_S = 2.0

HANDLER = r"""
v=$(cat)
echo "$INST $KRETRY_PARTITION ${v%%:*}" >> "$LOG"
exit 0
"""


def calls(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.split() for l in f.read().splitlines()
                if len(l.split()) == 3]


def rebalances(text):
    return [l for l in text.splitlines() if "REBALANCE" in l and
            ("assigned" in l or "revoking" in l)]


def source_parts(lines, src):
    """The source partitions named by REBALANCE lines @lines, assigned
    minus revoked, in order."""
    held = set()
    for l in lines:
        parts = {int(w[len(src) + 1:-1]) for w in l.split()
                 if w.startswith(src + "[")}
        if "assigned" in l:
            held |= parts
        else:
            held -= parts
    return held


def produce(s, first):
    kcat(s.broker.bootstrap,
         ["-P", "-t", s.broker.name("orders"), "-K", "|"],
         stdin=b"".join(b"k%d|%d:x\n" % (i, i)
                        for i in range(first, first + BATCH)))


def main():
    if not real_bootstrap():
        print("SKIPPED: blackbox_static needs a real cluster in "
              "KRETRY_TEST_BOOTSTRAP: the mock cluster has no static "
              "membership")
        return 77
    s = Setup(__doc__, HANDLER, chain("orders", PARTITIONS, 1))
    if s.status is not None:
        return s.status
    src = s.broker.name("orders")
    group = s.broker.group("bb-static")
    procs = {}
    errs = {}

    def start(inst, n):
        errs[inst] = open(os.path.join(s.tmp.name, "%s%d.err" % (inst, n)),
                          "w+b")
        procs[inst] = subprocess.Popen(
            [s.cli, "run", "--bootstrap", s.broker.bootstrap, "--source",
             src, "--group", group, "--tiers", "100ms", "--verbose",
             "-X", "consumer.group.instance.id=%s-%s" % (group, inst),
             "-X", "socket.nagle.disable=true",
             "-X", "consumer.fetch.wait.max.ms=10",
             *group_x("consumer.session.timeout.ms=%d" % SESSION_MS,
                      "consumer.heartbeat.interval.ms=500"),
             "--exec", "exec sh " + s.handler],
            env=dict(os.environ, LOG=s.log, INST=inst), stderr=errs[inst])

    def held(inst):
        return source_parts(rebalances(file_text(errs[inst])), src)

    try:
        start("a", 1)
        wait_for("A holds the source", lambda: held("a"), 30)
        start("b", 1)
        wait_for("A and B hold two partitions each",
                 lambda: len(held("a")) == 2 and len(held("b")) == 2, 30)
        produce(s, 0)
        wait_for("the first batch handled",
                 lambda: len(calls(s.log)) >= BATCH, 30)
        a_lines = rebalances(file_text(errs["a"]))
        b_parts = held("b")
        t0 = time.monotonic()
        procs["b"].send_signal(signal.SIGTERM)
        check(procs["b"].wait(timeout=30) == 0, "B on SIGTERM: exit 0")
        produce(s, BATCH)
        # B is away for a while, as a restarted process is: long enough
        # for A's heartbeats to hear of a rebalance (every 500 ms), well
        # within the session.
        time.sleep(RESTART_GAP_S)
        start("b", 2)
        wait_for("every message handled",
                 lambda: len(calls(s.log)) >= 2 * BATCH, 30)
        restart = time.monotonic() - t0
        check(held("b") == b_parts, "B came back to its partitions %s "
              "(holds %s)" % (sorted(b_parts), sorted(held("b"))))
        # A last look, a moment after the last message: a rebalance that
        # B's return set off would have reached A by now (heartbeats
        # every 500 ms).
        time.sleep(1)
        a_now = rebalances(file_text(errs["a"]))
        check(a_now == a_lines, "no rebalance reached A (%d REBALANCE "
              "lines since: %s)" % (len(a_now) - len(a_lines),
                                    a_now[len(a_lines):][:4]))
        lines = calls(s.log)
        by_a = {int(p) for inst, p, _ in lines if inst == "a"}
        check(not by_a & b_parts, "A handled nothing of B's partitions "
              "(A: %s, B's: %s)" % (sorted(by_a), sorted(b_parts)))
        second = [l for l in lines if int(l[2]) >= BATCH]
        check(all(inst == "b" for inst, p, _ in second if int(p) in b_parts),
              "B handled the second batch on its partitions")
        n = collections.Counter(int(i) for _, _, i in lines)
        twice = sorted(i for i, c in n.items() if c > 1)
        check(set(n) == set(range(2 * BATCH)), "nothing lost (%d of %d "
              "handled)" % (len(n), 2 * BATCH))
        check(not twice, "nothing decided twice (%d twice: %s)" %
              (len(twice), twice[:10]))
        print("# B restarted, its batch handled, in %.1f s" % restart)
    except Exception as e:
        print("FAIL:", e)
        for inst, f in errs.items():
            print("--- %s stderr (REBALANCE) ---\n%s" %
                  (inst, "\n".join(rebalances(file_text(f)))))
        return 1
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        s.cleanup(None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
