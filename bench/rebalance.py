"""A member joins and one leaves a busy kretry group on real Kafka, under the
classic group protocol and under the consumer protocol (KIP-848), in the
same invocation on the same broker (bench/README.md "rebalance").

Each run: a fresh 12-partition source (with its 30 ms tier and DLQ, 12
partitions each) and a fresh group. Values "n-<i>" are produced at RATE a
second from start to end (i from 1, each once). Three members
(build-bench/bench/peers_kill_worker, i.e. tests/it_worker.c: 2 ms a
handler call, i % 7 fails once, i % 11 fails for good, one handler thread)
join at once; once each has handled a message, SETTLE seconds of steady
state; then a fourth member starts (the join), WINDOW seconds later the
first member gets SIGTERM and leaves the group (the leave), WINDOW seconds
later the production stops, the group drains what is left and every member
gets SIGTERM. Every OK is stamped by the member (KRETRY_IT_STAMP=1:
CLOCK_MONOTONIC, the clock time.monotonic() reads).

Per event and per member running through it (join: the three first
members; leave: the two staying and the one that joined):
  pause    the longest gap between two OKs of that member that ends inside
           the event's window (or from its last OK to the window's end);
           "steady" is the same over the last SETTLE/2 seconds before the
           join (the first half lets the three members' own joins settle)
  repeats  OKs of a message already handled OK, by any member, that fall in
           the event's window (the leave's runs to the end of the drain)
  back     from the event to the last message in its window handled more
           than LATE ms after it was produced (first attempts only, i % 7
           != 0): how long until the group keeps up with the input again
Protocols alternate, classic first in even runs.

usage: rebalance.py WORKER BOOTSTRAP [--runs N] [--rate R] [--window S]
                    [--settle S] [--late MS] [--output table|json]
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

from kafka import KafkaProducer
from kafka.admin import (ConfigResource, ConfigResourceType,
                         KafkaAdminClient, NewTopic)

PARTS = 12
PROTOCOLS = ["classic", "consumer"]


def log(*a):
    print("rebalance:", *a, file=sys.stderr, flush=True)


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


class Producer(threading.Thread):
    """Values "n-<i>" at rate a second, paced on the monotonic clock;
    sent[i] is when message i was handed to the client."""

    def __init__(self, boot, topic, rate):
        super().__init__(daemon=True)
        self.p = KafkaProducer(bootstrap_servers=boot, linger_ms=2, acks=1)
        self.topic, self.rate = topic, rate
        self.sent = {}
        self.halt = threading.Event()
        self.error = None

    def run(self):
        t0, i = time.monotonic(), 1
        try:
            while not self.halt.is_set():
                now = time.monotonic()
                while i <= int((now - t0) * self.rate):
                    self.p.send(self.topic, f"n-{i}".encode())
                    self.sent[i] = now
                    i += 1
                time.sleep(0.005)
            self.p.flush(30)
        except Exception as e:  # reported with the run
            self.error = repr(e)
        self.p.close(10)


class Member:
    def __init__(self, run, k):
        self.k = k
        self.out = f"{run.base}.m{k}.out"
        self.err = f"{run.base}.m{k}.err"
        env = dict(os.environ, KRETRY_IT_STAMP="1",
                   KRETRY_TEST_GROUP_PROTOCOL=run.proto)
        self.started = time.monotonic()
        self.p = subprocess.Popen(
            [run.worker, run.boot, run.topic, run.group, self.out],
            stdout=subprocess.DEVNULL, stderr=open(self.err, "w"), env=env)
        self.stopped = None
        self.rc = None

    def lines(self):
        """[(ms, i)] in file order."""
        try:
            with open(self.out) as f:
                rows = [l.split() for l in f.read().splitlines()]
        except FileNotFoundError:
            return []
        return [(float(r[2]) / 1000, int(r[1])) for r in rows if len(r) == 3]

    def stop(self):
        t = time.monotonic()
        self.p.send_signal(signal.SIGTERM)
        try:
            self.rc = self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.rc = "killed after 30 s"
            self.p.wait()
        self.stopped = time.monotonic()
        return self.stopped - t


def pause(ts, w0, w1):
    """The longest gap between consecutive OKs ending in (w0, w1], the
    last OK before w0 included as a start; from the last OK to w1 too."""
    before = [t for t in ts if t <= w0]
    inside = [t for t in ts if w0 < t <= w1]
    prev = before[-1] if before else w0
    worst = 0.0
    for t in inside:
        worst = max(worst, t - prev)
        prev = t
    return max(worst, w1 - prev)


class Run:
    def __init__(self, a, proto, r):
        self.worker, self.boot, self.proto = a.worker, a.boot, proto
        stamp = time.strftime("%H%M%S")
        self.topic = f"rebal-{proto}-{r}-{stamp}"
        self.group = self.topic + "-g"
        self.base = f"/tmp/{self.topic}"
        self.a = a

    def topics(self, create):
        names = [self.topic, self.topic + ".retry.1", self.topic + ".dlq"]
        adm = KafkaAdminClient(bootstrap_servers=self.boot)
        try:
            if create:
                # the tier and DLQ 128 KiB above the source's limit (the
                # broker's 8 MiB in scripts/kafka.sh), as `topology apply`
                # makes them: else every member warns that a copy of a
                # message near the limit would be refused
                limit = 8388608
                try:
                    node = str(adm._client.cluster.brokers().pop().nodeId)
                    src = adm.describe_configs(
                        [ConfigResource(ConfigResourceType.BROKER, node)])
                    for _, _, _, _, entries in src[0].resources:
                        for e in entries:
                            if e[0] == "message.max.bytes":
                                limit = int(e[1])
                except Exception as e:
                    log(f"broker's message.max.bytes not read ({e!r}): "
                        f"taking {limit}")
                big = {"max.message.bytes": str(limit + 131072)}
                adm.create_topics([NewTopic(names[0], PARTS, 1)] +
                                  [NewTopic(n, PARTS, 1, topic_configs=big)
                                   for n in names[1:]])
            else:
                adm.delete_topics(names)
        finally:
            adm.close()

    def go(self):
        a = self.a
        self.topics(True)
        time.sleep(1)  # leaders elected before the first produce
        res = {"protocol": self.proto, "load_start": loadavg()}
        prod = Producer(self.boot, self.topic, a.rate)
        members = []
        try:
            prod.start()
            members = [Member(self, k) for k in range(3)]
            t0 = time.monotonic()
            while any(not m.lines() for m in members):
                if time.monotonic() > t0 + 60:
                    res["never_handled"] = [m.k for m in members
                                            if not m.lines()]
                    break
                time.sleep(0.1)
            res["first_ok_s"] = round(time.monotonic() - t0, 2)
            time.sleep(a.settle)
            t_join = time.monotonic()
            members.append(Member(self, 3))
            time.sleep(a.window)
            t_leave = time.monotonic()
            res["leaver_close_s"] = round(members[0].stop(), 2)
            time.sleep(max(0.0, t_leave + a.window - time.monotonic()))
            t_quiet = time.monotonic()
            prod.halt.set()
            prod.join(60)
            res["load_events"] = loadavg()
            res["drain"] = self.drain(members, prod)
            t_end = time.monotonic()
            for m in members[1:]:
                m.stop()
        finally:
            prod.halt.set()
            for m in members:
                if m.p.poll() is None:
                    m.p.kill()
                    m.p.wait()
        res["load_end"] = loadavg()
        res.update(self.measure(members, prod, t_join, t_leave, t_quiet,
                                t_end))
        res["exit_codes"] = [m.rc for m in members]
        res["stderr"] = self.stderr(members)
        if prod.error:
            res["producer_error"] = prod.error
        self.topics(False)
        for m in members:
            for f in (m.out, m.err):
                try:
                    os.unlink(f)
                except FileNotFoundError:
                    pass
        return res

    def drain(self, members, prod):
        """Until every message that ends OK is handled, or nothing new for
        15 s (deadline 90 s); the seconds it took."""
        expected = {i for i in prod.sent if i % 11}
        t0 = time.monotonic()
        last, n = t0, -1
        while time.monotonic() < t0 + 90:
            seen = {i for m in members for _, i in m.lines()}
            if expected <= seen:
                break
            if len(seen) != n:
                n, last = len(seen), time.monotonic()
            elif time.monotonic() > last + 15:
                break
            time.sleep(0.2)
        return round(time.monotonic() - t0, 2)

    def measure(self, members, prod, t_join, t_leave, t_quiet, t_end):
        a = self.a
        lines = {m.k: m.lines() for m in members}
        ts = {k: [t for t, _ in v] for k, v in lines.items()}
        allok = sorted((t, i, k) for k, v in lines.items() for t, i in v)
        seen, rep = set(), {"startup": 0, "join": 0, "leave": 0}
        for t, i, k in allok:
            if i in seen:
                ev = ("leave" if t >= t_leave else
                      "join" if t >= t_join else "startup")
                rep[ev] += 1
            seen.add(i)
        expected = {i for i in prod.sent if i % 11}
        lost = sorted(expected - seen)

        def back(w0, w1):
            late = [t for t, i, _ in allok if w0 <= t < w1 and i % 7 and
                    i in prod.sent and t - prod.sent[i] > a.late / 1000]
            return round(max(late) - w0, 3) if late else 0.0

        def lateness(w0, w1):
            d = sorted(t - prod.sent[i] for t, i, _ in allok
                       if w0 <= t < w1 and i % 7 and i in prod.sent)
            if not d:
                return None
            return {"p50_ms": round(1000 * d[len(d) // 2], 1),
                    "p99_ms": round(1000 * d[int(len(d) * 0.99)], 1),
                    "max_ms": round(1000 * d[-1], 1)}

        def count(k, w0, w1):
            return sum(1 for t in ts[k] if w0 < t <= w1)

        steady0 = t_join - a.settle / 2
        joiner_first = next((t for t in ts[3] if t >= t_join), None)
        return {
            "events": {
                "join": {
                    "pause_s": [round(pause(ts[k], t_join, t_leave), 3)
                                for k in (0, 1, 2)],
                    "steady_pause_s": [round(pause(ts[k], steady0, t_join), 3)
                                       for k in (0, 1, 2)],
                    "handled": [count(k, t_join, t_leave) for k in range(4)],
                    "repeats": rep["join"],
                    "back_s": back(t_join, t_leave),
                    "lateness": lateness(t_join, t_leave),
                    "joiner_first_ok_s": (round(joiner_first - t_join, 2)
                                          if joiner_first else None),
                },
                "leave": {
                    "pause_s": [round(pause(ts[k], t_leave, t_quiet), 3)
                                for k in (1, 2, 3)],
                    "handled": [count(k, t_leave, t_quiet) for k in (1, 2, 3)],
                    "repeats": rep["leave"],
                    "back_s": back(t_leave, t_quiet),
                    "lateness": lateness(t_leave, t_quiet),
                },
            },
            "steady_lateness": lateness(steady0, t_join),
            "startup_repeats": rep["startup"],
            "produced": len(prod.sent),
            "expected_ok": len(expected),
            "lost": len(lost),
            "lost_sample": lost[:20],
            "drain_end_s": round(t_end - t_quiet, 2),
        }

    def stderr(self, members):
        out = {}
        for m in members:
            try:
                with open(m.err) as f:
                    text = f.read().splitlines()
            except FileNotFoundError:
                continue
            if text:
                out[f"m{m.k}"] = {"lines": len(text), "tail": text[-5:]}
        return out


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summary(runs):
    s = {}
    for proto in PROTOCOLS:
        rs = [r for r in runs if r["protocol"] == proto]
        for ev in ("join", "leave"):
            e = [r["events"][ev] for r in rs]
            pauses = [p for x in e for p in x["pause_s"]]
            row = {"pause_p50_s": med(pauses), "pause_max_s": max(pauses),
                   "pause_per_run_s": [x["pause_s"] for x in e],
                   "repeats": [x["repeats"] for x in e],
                   "repeats_median": med([x["repeats"] for x in e]),
                   "back_s": [x["back_s"] for x in e],
                   "back_median_s": med([x["back_s"] for x in e])}
            if ev == "join":
                st = [p for x in e for p in x["steady_pause_s"]]
                row["steady_pause_p50_s"] = med(st)
                row["steady_pause_max_s"] = max(st)
                row["joiner_first_ok_s"] = [x["joiner_first_ok_s"] for x in e]
            s[f"{proto}/{ev}"] = row
        s[f"{proto}/lost"] = [r["lost"] for r in rs]
    return s


def print_table(res):
    print(f"rebalance on {res['bootstrap']} ({PARTS} partitions, "
          f"{res['rate']} msgs/s, {res['runs']} runs a protocol, windows "
          f"{res['window']} s), medians; pauses over members and runs")
    print(f"{'protocol':9} {'event':6} {'pause p50':>9} {'pause max':>9} "
          f"{'steady p50/max':>14} {'repeats (runs)':>22} "
          f"{'back s (runs)':>24}")
    for key, row in res["summary"].items():
        if not isinstance(row, dict):
            continue
        proto, ev = key.split("/")
        steady = ("%.3f/%.3f" % (row["steady_pause_p50_s"],
                                 row["steady_pause_max_s"])
                  if ev == "join" else "")
        print(f"{proto:9} {ev:6} {row['pause_p50_s']:9.3f} "
              f"{row['pause_max_s']:9.3f} {steady:>14} "
              f"{row['repeats_median']:>6} {str(row['repeats']):>15} "
              f"{row['back_median_s']:>6} {str(row['back_s']):>17}")
    for r in res["results"]:
        j, l = r["events"]["join"], r["events"]["leave"]
        print(f"  run {r['run']} {r['protocol']:8} load "
              f"{r['load_start'][0]:.2f}-{r['load_end'][0]:.2f}; join "
              f"pauses {j['pause_s']} handled {j['handled']} joiner first "
              f"OK {j['joiner_first_ok_s']} s; leave pauses {l['pause_s']} "
              f"handled {l['handled']}; leaver closed in "
              f"{r['leaver_close_s']} s; lost {r['lost']}; startup repeats "
              f"{r['startup_repeats']}; worker stderr lines "
              f"{sum(v['lines'] for v in r['stderr'].values())}")


def main():
    argv = sys.argv[1:]
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 64

    class A:
        pass
    a = A()
    a.worker, a.boot = argv[0], argv[1]
    a.runs, a.rate, a.window, a.settle, a.late, a.output = 3, 500, 15, 10, 200, "table"
    opts = {"--runs": ("runs", int), "--rate": ("rate", int),
            "--window": ("window", float), "--settle": ("settle", float),
            "--late": ("late", float), "--output": ("output", str)}
    rest = argv[2:]
    while rest:
        o = rest.pop(0)
        if o not in opts or not rest:
            print(f"rebalance.py: unknown or incomplete option {o}",
                  file=sys.stderr)
            return 64
        setattr(a, opts[o][0], opts[o][1](rest.pop(0)))
    res = {"bootstrap": a.boot, "runs": a.runs, "rate": a.rate,
           "window": a.window, "settle": a.settle, "late_ms": a.late,
           "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "results": []}
    for r in range(a.runs):
        for proto in (PROTOCOLS if r % 2 == 0 else PROTOCOLS[::-1]):
            log(f"run {r} {proto} (load {loadavg()[0]:.2f})")
            x = Run(a, proto, r).go()
            x["run"] = r
            res["results"].append(x)
            log(json.dumps(x))
    res["summary"] = summary(res["results"])
    if a.output == "json":
        print(json.dumps(res))
    else:
        print_table(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
