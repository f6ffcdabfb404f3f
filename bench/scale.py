#!/usr/bin/env python3
"""bench/run --scale: how kretry's costs grow, on a real cluster.

usage: scale.py KRETRY_CLI KRETRY_SCALE BOOTSTRAP [--runs N] [--only PART]
                [--sizes 10000,100000] [--kinds tier,versions,dlq,dlq-few,dlq-lifted]
                [--partitions 8,64,512] [--members 1,2,3]
                [--messages N] [--window S] [--out FILE.json]

PART: idle (CPU of an idle `kretry run` and `kretry ui` at 8 and 512
partitions), restore (assignment -> first message handled against waiting
tier copies, changelog keys and parked DLQ copies, with the resident
memory after it; bench/scale.c does one curve), partitions (resident memory
of an idle `kretry run` against source partitions), throughput (kretry_bench's
happy and retry_hop, kretry against raw librdkafka, at 8, 64 and 512
partitions: --partitions LIST, --messages N for both), members (the
same with 1, 2 and 3 processes a side in one consumer group, kretry_bench
--members, every topic at 12 partitions unless --partitions; only when
asked by name, on the three-node cluster: scripts/kafka.sh start --nodes
3). Every point is the median of --runs, printed with the load average
(1 min) at its start (and, for the throughput points, every run's range).
One JSON object (every point, every run) is written to --out; the table
goes to stdout. bench/README.md, "scale".
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time



def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def tree(pid):
    """pid and its descendants (kretry run --exec forks a guard process)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, t)) as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def cpu_ns(pid):
    """Time on a CPU (ns, the scheduler's own count: finer than the 10 ms
    ticks of /proc/PID/stat) of pid and its descendants, every thread.
    A thread that exited inside the window is not counted."""
    n = 0
    for p in tree(pid):
        try:
            for t in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/schedstat" % (p, t)) as f:
                    n += int(f.read().split()[0])
        except OSError:
            continue
    return n


def rss_kib(pid):
    """VmRSS of pid alone (the guard process is a few hundred KiB)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def topology(d, name, parts, bootstrap):
    path = os.path.join(d, name + ".yaml")
    with open(path, "w") as f:
        f.write("""kafka:
  bootstrap.servers: %s
topologies:
  - name: %s
    source: %s
    group: %s-g
    retry:
      tiers: [1s, 10s]
    topics:
      partitions: %d
      replication: 1
""" % (bootstrap, name, name, name, parts))
    return path


def apply(cli, path):
    subprocess.run([cli, "topology", "apply", path, "--yes",
                    "--timeout", "120000"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def idle_point(argv, settle, window, runs):
    """CPU (% of one core) of a process doing nothing: after `settle` s,
    `runs` consecutive windows of `window` s; its RSS at the end."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        time.sleep(settle)
        if p.poll() is not None:
            raise RuntimeError("%s exited %d" % (argv[:2], p.returncode))
        out = []
        s0, m0 = cpu_ns(p.pid), time.monotonic()
        for _ in range(runs):
            ld = load()
            t0, w0 = cpu_ns(p.pid), time.monotonic()
            time.sleep(window)
            t1, w1 = cpu_ns(p.pid), time.monotonic()
            out.append({"cpu_pct": 100.0 * (t1 - t0) / 1e9 / (w1 - w0),
                        "cpu_ms": round((t1 - t0) / 1e6, 1),
                        "seconds": round(w1 - w0, 2), "load": ld})
        # the whole span: a median of windows misses work done less often
        # than a window (kretry ui's figures, once a minute unwatched)
        span = 100.0 * (cpu_ns(p.pid) - s0) / 1e9 / (time.monotonic() - m0)
        return out, rss_kib(p.pid), span
    finally:
        p.terminate()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def part_idle(o, doc):
    d = tempfile.mkdtemp(prefix="kretry-scale-")
    doc["idle"] = []
    tag = str(int(time.time()))
    for parts in (8, 512):
        name = "scale-idle%d-%s" % (parts, tag)
        path = topology(d, name, parts, o["bootstrap"])
        apply(o["cli"], path)
        for prog in ("run", "raw", "ui"):
            # settled: joined, and past the 10 s after a rebalance in which
            # kretry renews its partitions' queue forwards every second
            if prog == "run":
                argv = [o["cli"], "run", "-f", path, "--exec", "true"]
                settle = 25
            elif prog == "raw":
                # librdkafka alone, subscribed to what kretry run consumes
                argv = [o["scale"], o["bootstrap"], "raw-idle",
                        name + "-raw", name, name + ".retry.1",
                        name + ".retry.2"]
                settle = 25
            else:
                argv = [o["cli"], "ui", "-f", path, "--listen",
                        "127.0.0.1:0"]
                settle = 8
            runs, rss, span = idle_point(argv, settle, o["window"],
                                         o["runs"])
            pt = {"program": prog, "partitions": parts, "runs": runs,
                  "rss_kib": rss, "span_cpu_pct": span,
                  "cpu_pct": statistics.median(r["cpu_pct"] for r in runs)}
            doc["idle"].append(pt)
            print("idle  %-10s %4d partitions: %.3f %% of a core "
                  "(median of %d x %d s; %s; whole %d s %.3f %%; loads %s), "
                  "RSS %d KiB" % (
                      "raw" if prog == "raw" else "kretry " + prog,
                      parts, pt["cpu_pct"], len(runs), o["window"],
                      " ".join("%.3f" % r["cpu_pct"] for r in runs),
                      len(runs) * o["window"], span,
                      " ".join("%.1f" % r["load"] for r in runs), rss),
                  flush=True)


def part_restore(o, doc):
    doc["restore"] = []
    for kind in o["kinds"]:
        for n in o["sizes"]:
            r = subprocess.run([o["scale"], o["bootstrap"], kind, str(n),
                                str(o["runs"])], stdout=subprocess.PIPE,
                               text=True)
            if r.returncode != 0:
                print("restore %s %d: kretry_scale exited %d" % (
                    kind, n, r.returncode), flush=True)
                continue
            pt = json.loads(r.stdout)
            doc["restore"].append(pt)
            print("restore %-10s %8d: assigned -> first handled %7.0f ms, "
                  "restore %7.0f ms, RSS %6d KiB (median of %d; %s ms; "
                  "loads %s)" % (
                      kind, n, pt["first_ms"], pt["restore_ms"],
                      pt["rss_kib"], len(pt["runs"]),
                      " ".join("%.0f" % x["first_ms"] for x in pt["runs"]),
                      " ".join("%.1f" % x["load"] for x in pt["runs"])),
                  flush=True)


def part_partitions(o, doc):
    d = tempfile.mkdtemp(prefix="kretry-scale-")
    doc["partitions"] = []
    tag = str(int(time.time()))
    for parts in (8, 64, 512):
        name = "scale-parts%d-%s" % (parts, tag)
        path = topology(d, name, parts, o["bootstrap"])
        apply(o["cli"], path)
        runs = []
        for _ in range(o["runs"]):
            ld = load()
            argv = [o["cli"], "run", "-f", path, "--exec", "true"]
            p = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            time.sleep(20 if parts > 64 else 12)
            runs.append({"rss_kib": rss_kib(p.pid), "load": ld})
            p.terminate()
            p.wait(60)
        pt = {"partitions": parts, "runs": runs,
              "rss_kib": statistics.median(r["rss_kib"] for r in runs)}
        doc["partitions"].append(pt)
        print("rss   kretry run %4d partitions (+2 tiers, DLQ): %d KiB "
              "(median of %d; %s; loads %s)" % (
                  parts, pt["rss_kib"], len(runs),
                  " ".join(str(r["rss_kib"]) for r in runs),
                  " ".join("%.1f" % r["load"] for r in runs)), flush=True)


def bench_point(o, sc, n, parts, members=None):
    """kretry_bench's scenario sc, kretry against raw librdkafka (same
    input, same run), every topic at `parts` partitions, with `members`
    processes a side in one group (--members) if given: the point, printed
    with its runs' range, or None when kretry_bench printed none."""
    bench = os.path.join(os.path.dirname(o["scale"]), "kretry_bench")
    env = dict(os.environ, KRETRY_BENCH_BOOTSTRAP=o["bootstrap"],
               KRETRY_BENCH_PARTITIONS=str(parts))
    argv = [bench, "--only", sc, "--runs", str(o["runs"]), "--messages",
            str(n), "--output", "json"]
    where = "%4d partitions" % parts
    if members:
        argv += ["--members", str(members)]
        where += ", %d member%s" % (members, "s" if members > 1 else "")
    r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, text=True)
    try:
        x = json.loads(r.stdout)["scenarios"][0]
    except (ValueError, KeyError, IndexError):
        print("thru  %-9s %s: kretry_bench exited %d" % (sc, where,
                                                         r.returncode),
              flush=True)
        return None
    x["partitions"] = parts
    x["messages"] = n
    runs = x.get("runs")
    if x.get("ratio") is None or not runs:
        print("thru  %-9s %s, %d msgs: %s" % (
            sc, where, n, x.get("error") or x.get("skipped")), flush=True)
        return x

    def med(k, fmt):
        v = [q[k] for q in runs]
        return (fmt + " (" + fmt + "-" + fmt + ")") % (x[k], min(v), max(v))
    print("thru  %-9s %s, %d msgs: kretry %s/s, raw %s/s, ratio %s "
          "(median of %d; loads %s)" % (
              sc, where, n, med("kretry_msgs_per_s", "%.0f"),
              med("raw_msgs_per_s", "%.0f"), med("ratio", "%.3f"),
              len(runs), " ".join("%.1f" % q["load"] for q in runs)),
          flush=True)
    return x


def bench_points(o, doc, part, sizes):
    """doc[part]: happy and retry_hop at each (partitions, members)."""
    doc[part] = []
    for parts, members in sizes:
        for sc, n in (("happy", o["happy_n"]), ("retry_hop", o["hop_n"])):
            x = bench_point(o, sc, n, parts, members)
            if x:
                doc[part].append(x)


def part_throughput(o, doc):
    """kretry_bench's happy and retry_hop at 8, 64, 512 partitions."""
    bench_points(o, doc, "throughput",
                 [(p, None) for p in o["parts"] or [8, 64, 512]])


def part_members(o, doc):
    """The same with 1, 2 and 3 processes a side in one group (--members),
    every topic at 12 partitions unless --partitions: each member's share
    the same. Meant for the three-node cluster."""
    bench_points(o, doc, "members",
                 [(p, m) for p in o["parts"] or [12] for m in o["members"]])


def main():
    a = sys.argv[1:]
    if len(a) < 3:
        print(__doc__, file=sys.stderr)
        return 64
    o = {"cli": a[0], "scale": a[1], "bootstrap": a[2], "runs": 3,
         "only": None, "sizes": [10000, 100000], "out": None, "window": 20,
         "parts": None, "members": [1, 2, 3],
         "kinds": ["tier", "versions", "dlq", "dlq-few", "dlq-lifted"], "happy_n": 200000, "hop_n": 60000}
    i = 3
    while i < len(a):
        k, v = a[i], a[i + 1] if i + 1 < len(a) else None
        if k == "--runs":
            o["runs"] = int(v)
        elif k == "--only":
            o["only"] = v
        elif k == "--sizes":
            o["sizes"] = [int(x) for x in v.split(",")]
        elif k == "--out":
            o["out"] = v
        elif k == "--kinds":
            o["kinds"] = v.split(",")
        elif k == "--partitions":
            o["parts"] = [int(x) for x in v.split(",")]
        elif k == "--members":
            o["members"] = [int(x) for x in v.split(",")]
        elif k == "--messages":
            o["happy_n"] = o["hop_n"] = int(v)
        elif k == "--window":
            o["window"] = int(v)
        else:
            print("scale.py: unknown flag %s" % k, file=sys.stderr)
            return 64
        i += 2
    doc = {"bootstrap": o["bootstrap"], "started": time.strftime(
        "%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "cores": os.cpu_count()}
    for part, fn in (("idle", part_idle), ("restore", part_restore),
                     ("partitions", part_partitions),
                     ("throughput", part_throughput),
                     ("members", part_members)):
        # members only by name: it wants another cluster (three nodes)
        if o["only"] == part or (o["only"] is None and part != "members"):
            fn(o, doc)
            # after every part: a run cut short keeps what it measured
            doc["ended"] = time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                         time.gmtime())
            if o["out"]:
                with open(o["out"], "w") as f:
                    json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
