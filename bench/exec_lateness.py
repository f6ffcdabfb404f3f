#!/usr/bin/python3
"""Retry lateness through `kretry run --exec`, the flow an operator runs.

The `exec_backlog` scenario of bench/run (bench/README.md). A backlog of
MESSAGES messages on 4 partitions (a quarter each: ok, flaky -- fails
once --, poison -- dead-letters at once -- and always -- fails every
time), one `kretry run --exec` with a bash handler script at
--concurrency N (1, the default, or more), tiers 300ms,600ms without
jitter. The handler logs when each call starts and ends ($EPOCHREALTIME:
no fork of its own). Each retry's due time is read from its tier copy's
kretry-due-ts header, so that:

  late  = call start - due time
  busy  = the part of it every handler slot was taken by other calls
          (work ahead of it); overtaken = the part of that in which a
          call with no claim to go first (a source message, a retry due
          later) held a slot it took after this retry was due: due
          retries are meant to go first, so that part is kretry's too
  own   = late - busy: the time a slot was not in a script: kretry
          handing the message out and starting commands, this retry's and
          those of the calls ahead of it (the clone and exec of /bin/sh,
          the shell starting bash, reaping it: 2-3 ms a call here, against
          about 1 ms of script)
  ahead = how many retries due before it (or at the same millisecond)
          started after it was due: they went first, as they may; a
          retry with none ahead is "first in line", and its lateness is
          kretry's own plus what the slots were busy with (at most one
          call each). At concurrency 1 the issue's flow brings retries
          due about as fast as one handler takes them (each failure's
          retry comes due as fast as the failures came), so they queue
          behind each other whatever kretry does: the first-in-line
          figure is the one to read against the in-process
          delay_backlog, whose retries never queue.
  decided = a retry's due time less its tier's delay less the end of
          the call that failed: the time kretry took to decide the
          failure (the due time counts from the decision, so it is not
          in late).

Each run then runs the library bench's delay_backlog once (kretry_bench
--only delay_backlog --runs 1, the same cluster), so the exec flow's p99
is read against the in-process figure of the same run; the target is the
exec p99 within one handler call (the run's median start-to-start cycle
at the handler) plus 20 ms of it.

On `kretry dev-broker` (the default) the mock answers a Fetch of empty
partitions only after fetch.wait.max.ms (500 ms by default), whatever
arrives meanwhile, which a real broker does not: a tier shorter than that
is fetched late there. --fetch-wait MS sets consumer.fetch.wait.max.ms.

usage: bench/exec_lateness.py [--bootstrap HOST:PORT] [--runs N]
                              [--messages N] [--concurrency N]
                              [--fetch-wait MS] [--kretry PATH]
                              [--bench PATH] [--output table|json]
                              [--dump FILE]
Prints one line per run and the medians; needs kcat and kafka-python.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

HANDLER = r"""#!/bin/bash
start=$EPOCHREALTIME
v=$(cat)
case "$v" in
  ok*) rc=0;;
  flaky*) [ "$KRETRY_ATTEMPT" -ge 2 ] && rc=0 || rc=75;;
  poison*) echo "cannot parse" >&2; rc=2;;
  *) rc=75;;
esac
echo "$start $EPOCHREALTIME $KRETRY_ORIGINAL_PARTITION $KRETRY_ORIGINAL_OFFSET $KRETRY_ATTEMPT" >> "$LOG"
exit $rc
"""
KINDS = ("ok", "flaky", "poison", "always")
# Calls a message of each kind gets: ok and poison 1, flaky 2, always 3
# (attempt 3 is the last: --max-attempts 3).
KIND_CALLS = {"ok": 1, "flaky": 2, "poison": 1, "always": 3}
TIERS_MS = (300, 600)


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


def delete_topics(bootstrap, topics):
    from kafka.admin import KafkaAdminClient
    a = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        a.delete_topics(topics)
    finally:
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


def measure(segs, lo, hi):
    """Length of the union of [a, b) segments inside [lo, hi)."""
    total, end = 0.0, lo
    for a, b in sorted(segs):
        a, b = max(a, end), min(b, hi)
        if b > a:
            total += b - a
            end = b
    return total


def busy_split(calls, due, slots):
    """Per retry: (late, busy, overtaken), as the module's doc says.
    calls: (start, end, p, off, attempt) sorted by start."""
    out = []
    for i, (s, e, p, off, a) in enumerate(calls):
        d = due.get((p, off, a))
        if a < 2 or d is None:
            continue
        if s <= d:
            out.append((s - d, 0.0, 0.0))
            continue
        # The other calls running at some instant of [d, s).
        other = [(s2, e2, p2, o2, a2) for j, (s2, e2, p2, o2, a2)
                 in enumerate(calls) if j != i and s2 < s and e2 > d]
        cuts = sorted({d, s} | {x for c in other for x in c[:2]
                                if d < x < s})
        busy = over = 0.0
        for lo, hi in zip(cuts, cuts[1:]):
            mid = (lo + hi) / 2
            run = [c for c in other if c[0] <= mid < c[1]]
            if len(run) < slots:
                continue
            busy += hi - lo
            if any(c[0] >= d and (c[4] == 1 or
                                  due.get(c[2:5], d) > d) for c in run):
                over += hi - lo
        out.append((s - d, busy, over))
    return out


def ahead(calls, due):
    """Per retry: how many retries due before it (or at the same
    millisecond) started after it was due (they went first, as they may:
    work ahead of it)."""
    out = []
    for s, e, p, off, a in calls:
        d = due.get((p, off, a))
        if a < 2 or d is None:
            continue
        out.append(sum(1 for s2, e2, p2, o2, a2 in calls
                       if a2 >= 2 and d <= s2 < s and
                       due.get((p2, o2, a2), d + 1) <= d))
    return out


def decide_lag(calls, due):
    """Per retry: its due time less the tier's delay less the end of the
    call that failed: how long kretry took to decide that failure (the
    due time counts from the decision, so this is not in `late`)."""
    end = {(p, off, a): e for s, e, p, off, a in calls}
    out = []
    for (p, off, a), d in due.items():
        e = end.get((p, off, a - 1))
        if e is not None:
            out.append(d - TIERS_MS[min(a - 1, 2) - 1] - e)
    return out


def cycle_ms(calls, slots):
    """Median time a slot takes from one call's start to the next's:
    script, command start and kretry's part, as a handler call costs it.
    At concurrency > 1 a call that started when exactly one slot was free
    is counted from the latest end before it."""
    out = []
    for i, (s, e, p, off, a) in enumerate(calls):
        ends = [c[1] for c in calls[:i] if c[1] <= s]
        running = sum(1 for c in calls[:i] if c[1] > s)
        if ends and running == slots - 1:
            prev = max(ends)
            starts = [c[0] for c in calls[:i] if c[1] == prev]
            out.append(s - prev + (prev - starts[0]))
    return statistics.median(out) if out else float("nan")


def exec_run(o, tmp, b):
    src = "lateness-" + uuid.uuid4().hex[:8]
    topics = [src, src + ".retry.1", src + ".retry.2", src + ".dlq"]
    broker = None
    if o.bootstrap:
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
        calls_total = sum(KIND_CALLS[KINDS[i % 4]]
                          for i in range(o.messages))
        load0 = loadavg()
        run = subprocess.Popen(
            [o.kretry, "run", "-b", b, "-s", src, "-g", "g-" + src,
             "--tiers", "%dms,%dms" % TIERS_MS, "--jitter", "0",
             "--max-attempts", "3", "--concurrency", str(o.concurrency),
             "--exec", handler, "-X", "consumer.session.timeout.ms=6000"] +
            (["-X", "consumer.fetch.wait.max.ms=%d" % o.fetch_wait]
             if o.fetch_wait is not None else []),
            env=dict(os.environ, LOG=log, LC_ALL="C"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            n = sum(1 for _ in open(log)) if os.path.exists(log) else 0
            if n >= calls_total:
                break
            time.sleep(0.2)
        run.terminate()
        run.wait(timeout=30)
        load = max(load0, loadavg())
        due = due_times(b, topics[1:3])
        if o.bootstrap:
            delete_topics(b, topics)
    finally:
        if broker:
            broker.terminate()
            broker.wait()
    calls = []
    for line in open(log):
        f = line.split()
        calls.append((float(f[0]) * 1000, float(f[1]) * 1000, int(f[2]),
                      int(f[3]), int(f[4])))
    calls.sort()
    if o.dump:
        with open(o.dump, "a") as f:
            for c in calls:
                f.write("%.3f %.3f %d %d %d %s\n" %
                        (c + (due.get(c[2:5], "-"),)))
            f.write("\n")
    split = busy_split(calls, due, o.concurrency)
    late = [x[0] for x in split]
    busy = [x[1] for x in split]
    own = [x[0] - x[1] for x in split]
    over = [x[2] for x in split]
    n_ahead = ahead(calls, due)
    lag = decide_lag(calls, due)
    first = [x[0] for x, k in zip(split, n_ahead) if k == 0]
    return {"calls": len(calls), "expected": calls_total,
            "retries": len(late), "late_p50": pct(late, .5),
            "late_p99": pct(late, .99), "own_p50": pct(own, .5),
            "own_p99": pct(own, .99), "busy_p99": pct(busy, .99),
            "overtaken_p99": pct(over, .99),
            "ahead_p50": pct(n_ahead, .5), "ahead_p99": pct(n_ahead, .99),
            "first": len(first), "first_p50": pct(first, .5),
            "first_p99": pct(first, .99), "decide_p99": pct(lag, .99),
            "script_ms": statistics.median(c[1] - c[0] for c in calls),
            "cycle_ms": cycle_ms(calls, o.concurrency), "load": load}


def bench_run(o):
    """The same run's in-process delay_backlog p50 and p99 (ms)."""
    env = dict(os.environ)
    if o.bootstrap:
        env["KRETRY_BENCH_BOOTSTRAP"] = o.bootstrap
    r = subprocess.run([o.bench, "--only", "delay_backlog", "--runs", "1",
                        "--output", "json"], env=env, capture_output=True,
                       text=True)
    try:
        d = json.loads(r.stdout)["delay_backlog"]
        return d["p50_ms"], d["p99_ms"]
    except (ValueError, KeyError, TypeError):
        sys.stderr.write(r.stderr)
        return float("nan"), float("nan")


KEYS = ("late_p50", "late_p99", "own_p50", "own_p99", "busy_p99",
        "overtaken_p99", "ahead_p50", "ahead_p99", "first", "first_p50",
        "first_p99", "decide_p99", "script_ms", "cycle_ms",
        "bench_p50", "bench_p99", "allowed_p99", "over_target",
        "first_over_target", "load")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bootstrap")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--messages", type=int, default=320)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--fetch-wait", type=int)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--kretry", default=os.path.join(here, "..", "build",
                                                     "kretry"))
    ap.add_argument("--bench", help="kretry_bench: also run delay_backlog "
                    "in each run")
    ap.add_argument("--output", default="table", choices=("table", "json"))
    ap.add_argument("--dump", help="append each call (start, end, "
                    "partition, offset, attempt, due; ms) to this file")
    o = ap.parse_args()
    o.messages -= o.messages % 4
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "handler.sh"), "w") as f:
            f.write(HANDLER)
        os.chmod(os.path.join(tmp, "handler.sh"), 0o755)
        for i in range(o.runs):
            # Which goes first alternates, as in kretry_bench.
            if o.bench and i % 2:
                bp = bench_run(o)
            r = exec_run(o, tmp, o.bootstrap)
            if o.bench and not i % 2:
                bp = bench_run(o)
            r["bench_p50"], r["bench_p99"] = bp if o.bench else (
                float("nan"), float("nan"))
            r["allowed_p99"] = r["bench_p99"] + r["cycle_ms"] + 20
            r["over_target"] = r["late_p99"] - r["allowed_p99"]
            r["first_over_target"] = r["first_p99"] - r["allowed_p99"]
            rows.append(r)
            if o.output == "table":
                print("run %d (load %.2f): %d of %d calls, %d retries, script"
                      " %.1f ms, cycle %.1f ms; late p50 %.0f p99 %.0f ms; "
                      "own p50 %.0f p99 %.0f ms; busy p99 %.0f ms, overtaken "
                      "p99 %.0f ms; retries ahead p50 %.0f p99 %.0f; first in"
                      " line (%d) p50 %.0f p99 %.0f ms; decided p99 %.0f ms"
                      " after the call; delay_backlog p99 %.1f ms" %
                      (i + 1, r["load"], r["calls"], r["expected"],
                       r["retries"], r["script_ms"], r["cycle_ms"],
                       r["late_p50"], r["late_p99"], r["own_p50"],
                       r["own_p99"], r["busy_p99"], r["overtaken_p99"],
                       r["ahead_p50"], r["ahead_p99"], r["first"],
                       r["first_p50"], r["first_p99"], r["decide_p99"],
                       r["bench_p99"]),
                      file=sys.stderr if o.output == "json" else sys.stdout,
                      flush=True)
    med = {k: statistics.median(r[k] for r in rows) for k in KEYS}
    where = o.bootstrap or "kretry dev-broker"
    fw = o.fetch_wait if o.fetch_wait is not None else 500
    if o.output == "json":
        print(json.dumps({"cluster": where, "concurrency": o.concurrency,
                          "fetch_wait_max_ms": fw, "messages": o.messages,
                          "runs": rows, "median": med}))
    else:
        print("median of %d (%s, --concurrency %d, fetch.wait.max.ms %d): "
              "late p50 %.0f p99 %.0f ms; own p50 %.0f p99 %.0f ms; busy "
              "p99 %.0f ms, overtaken p99 %.0f ms; retries ahead p50 %.0f "
              "p99 %.0f; first in line p50 %.0f p99 %.0f ms; failures "
              "decided p99 %.0f ms after the call; script %.1f ms, cycle "
              "%.1f ms; load %.2f" %
              (len(rows), where, o.concurrency, fw, med["late_p50"],
               med["late_p99"], med["own_p50"], med["own_p99"],
               med["busy_p99"], med["overtaken_p99"], med["ahead_p50"],
               med["ahead_p99"], med["first_p50"], med["first_p99"],
               med["decide_p99"], med["script_ms"], med["cycle_ms"],
               med["load"]))
        if o.bench:
            print("same runs' delay_backlog p50 %.1f p99 %.1f ms; target: "
                  "exec p99 <= %.1f ms (its p99 + one cycle + 20 ms): %s "
                  "(median of each run's exec p99 - allowed: %+.0f ms); "
                  "first in line: %s (%+.0f ms)" %
                  (med["bench_p50"], med["bench_p99"], med["allowed_p99"],
                   "met" if med["over_target"] <= 0 else "missed",
                   med["over_target"],
                   "met" if med["first_over_target"] <= 0 else "missed",
                   med["first_over_target"]))
    return 0 if all(r["calls"] >= r["expected"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
