#!/usr/bin/python3
"""Retry lateness through `kretry run --exec`, the flow an operator runs.

A backlog of MESSAGES messages on 4 partitions (a quarter each: ok, flaky
-- fails once --, poison -- dead-letter at once -- and always -- fails
every time), one `kretry run --exec` with a bash handler script at
--concurrency 1 (the default), tiers 300ms,600ms without jitter. The
handler logs when each call starts and ends. Each retry's due time is read
from its tier copy's kretry-due-ts header, so that:

  late  = call start - due time
  queue = the part of it the handler was busy with other calls (the
          previous call ended after the due time): work ahead of it;
          overtaken = the part of that spent on calls with no claim to go
          first (source messages, retries due later): due retries are
          meant to go first, so this is kretry's too
  own   = late - queue: what kretry adds beyond the handler being busy
          (fetching the tier copy, handing it out, starting the command)

On `kretry dev-broker` (the default) the mock answers a Fetch of empty
partitions only after fetch.wait.max.ms (500 ms by default), whatever
arrives meanwhile, which a real broker does not: a tier shorter than that
is fetched late there. --fetch-wait MS sets consumer.fetch.wait.max.ms.

usage: bench/exec_lateness.py [--bootstrap HOST:PORT] [--runs N]
                              [--messages N] [--fetch-wait MS]
                              [--kretry PATH]
Prints one line per run and the medians; needs kcat and kafka-python.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

HANDLER = r"""#!/bin/bash
start=$(date +%s%3N)
v=$(cat)
case "$v" in
  ok*) rc=0;;
  flaky*) [ "$KRETRY_ATTEMPT" -ge 2 ] && rc=0 || rc=75;;
  poison*) echo "cannot parse" >&2; rc=2;;
  *) rc=75;;
esac
echo "$start $(date +%s%3N) $KRETRY_ORIGINAL_PARTITION $KRETRY_ORIGINAL_OFFSET $KRETRY_ATTEMPT" >> "$LOG"
exit $rc
"""
KINDS = ("ok", "flaky", "poison", "always")


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))] if xs else float("nan")


def dev_broker(kretry, topics):
    args = [kretry, "dev-broker"]
    for t in topics:
        args += ["--topic", t + ":4"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    return p, p.stdout.readline().strip()


def create_topics(bootstrap, topics):
    from kafka.admin import KafkaAdminClient, NewTopic
    a = KafkaAdminClient(bootstrap_servers=bootstrap)
    a.create_topics([NewTopic(t, 4, 1) for t in topics])
    a.close()


def due_times(bootstrap, tiers):
    """(partition, offset, attempt) -> kretry-due-ts of the copy that
    brings that attempt."""
    from kafka import KafkaConsumer, TopicPartition
    due = {}
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                      consumer_timeout_ms=3000)
    tps = [TopicPartition(t, p) for t in tiers for p in range(4)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    for m in c:
        h = {k: v.decode() for k, v in m.headers}
        key = (int(h["kretry-original-partition"]),
               int(h["kretry-original-offset"]), int(h["kretry-attempt"]) + 1)
        due[key] = int(h["kretry-due-ts"])
    c.close()
    return due


def one_run(o, tmp):
    src = "lateness-" + uuid.uuid4().hex[:8]
    topics = [src, src + ".retry.1", src + ".retry.2", src + ".dlq"]
    broker = None
    if o.bootstrap:
        b = o.bootstrap
        create_topics(b, topics)
    else:
        broker, b = dev_broker(o.kretry, topics)
    log = os.path.join(tmp, src + ".log")
    handler = os.path.join(tmp, "handler.sh")
    try:
        for p in range(4):
            lines = "".join("k%d:%s-%d\n" % (i, KINDS[i % 4], i)
                            for i in range(o.messages) if i % 4 == p)
            subprocess.run(["kcat", "-P", "-b", b, "-t", src, "-p", str(p),
                            "-K", ":"], input=lines.encode(), check=True,
                           stderr=subprocess.DEVNULL)
        # 1 call for ok and poison, 2 for flaky, 3 for always.
        calls_total = o.messages // 4 * 7
        load0 = loadavg()
        run = subprocess.Popen(
            [o.kretry, "run", "-b", b, "-s", src, "-g", "g-" + src,
             "--tiers", "300ms,600ms", "--jitter", "0", "--exec", handler,
             "-X", "consumer.session.timeout.ms=6000"] +
            (["-X", "consumer.fetch.wait.max.ms=%d" % o.fetch_wait]
             if o.fetch_wait is not None else []),
            env=dict(os.environ, LOG=log), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        n = 0
        while time.monotonic() < deadline:
            n = sum(1 for _ in open(log)) if os.path.exists(log) else 0
            if n >= calls_total:
                break
            time.sleep(0.2)
        run.terminate()
        run.wait(timeout=30)
        load = max(load0, loadavg())
        due = due_times(b, topics[1:3])
    finally:
        if broker:
            broker.terminate()
            broker.wait()
    calls = sorted(tuple(int(x) for x in line.split())
                   for line in open(log))
    late, queue, own, over, dur = [], [], [], [], []
    prev_end = None
    for i, (start, end, p, off, attempt) in enumerate(calls):
        dur.append(end - start)
        d = due.get((p, off, attempt))
        if attempt >= 2 and d is not None:
            busy = max(0, min(start, prev_end or 0) - d)
            late.append(start - d)
            queue.append(busy)
            own.append(start - d - busy)
            # Calls started after this retry was due that had no claim to
            # go first: source messages and retries due later.
            ahead = 0
            for j in range(i - 1, -1, -1):
                s2, e2, p2, o2, a2 = calls[j]
                if e2 <= d:
                    break
                d2 = due.get((p2, o2, a2))
                if a2 == 1 or (d2 is not None and d2 > d):
                    ahead += min(e2, start) - max(s2, d)
            over.append(ahead)
        prev_end = end
    return {"calls": len(calls), "expected": calls_total,
            "retries": len(late), "late_p50": pct(late, .5),
            "late_p99": pct(late, .99), "own_p50": pct(own, .5),
            "own_p99": pct(own, .99), "queue_p99": pct(queue, .99),
            "over_p99": pct(over, .99),
            "call_ms": statistics.median(dur) if dur else float("nan"),
            "load": load}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bootstrap")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--messages", type=int, default=320)
    ap.add_argument("--fetch-wait", type=int)
    ap.add_argument("--kretry", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "kretry"))
    o = ap.parse_args()
    o.messages -= o.messages % 4
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "handler.sh"), "w") as f:
            f.write(HANDLER)
        os.chmod(os.path.join(tmp, "handler.sh"), 0o755)
        for i in range(o.runs):
            r = one_run(o, tmp)
            rows.append(r)
            print("run %d (load %.2f): %d of %d calls, %d retries, call %d ms;"
                  " late p50 %d p99 %d ms; own p50 %d p99 %d ms; behind "
                  "other calls p99 %d ms, of them overtaken p99 %d ms" %
                  (i + 1, r["load"], r["calls"], r["expected"], r["retries"],
                   r["call_ms"], r["late_p50"], r["late_p99"], r["own_p50"],
                   r["own_p99"], r["queue_p99"], r["over_p99"]), flush=True)
    med = {k: statistics.median(r[k] for r in rows)
           for k in ("late_p50", "late_p99", "own_p50", "own_p99",
                     "queue_p99", "over_p99", "call_ms", "load")}
    print("median of %d (%s, fetch.wait.max.ms %s): late p50 %d p99 %d ms; "
          "own p50 %d p99 %d ms; behind other calls p99 %d ms, overtaken "
          "p99 %d ms; call %d ms; load %.2f" %
          (len(rows), o.bootstrap or "kretry dev-broker",
           o.fetch_wait if o.fetch_wait is not None else "500 (default)",
           med["late_p50"], med["late_p99"], med["own_p50"], med["own_p99"],
           med["queue_p99"], med["over_p99"], med["call_ms"], med["load"]))
    return 0 if all(r["calls"] >= r["expected"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
