#!/usr/bin/env python3
"""kretry side by side with Spring Kafka and Parallel Consumer (issue 32).

Run by `bench/run --peers` (see bench/README.md "peers"): builds bench/peers
(mvn -q -B package: the first Maven fetch happens here, before any timing),
then, on the broker in KRETRY_BENCH_BOOTSTRAP, runs each scenario's sides
alternately (which side goes first alternates from run to run) and prints the
medians: a table, or one JSON object with --output json.

  bench/run --peers [--runs N] [--only a,b] [--output table|json]
                    [--kretry-messages N] [--spring-messages N]
                    [--spring-warmup N] [--delay-rate R]
                    [--delay-messages N] [--blocking-delay-messages N]
                    [--mem-messages N,M] [--mem-partitions P,Q]
                    [--fail-percents P,Q]
                    [--happy-kretry-messages N] [--happy-peer-messages N]
                    [--paced-rate R] [--paced-messages N]
                    [--value-sizes B,C] [--size-messages N]
                    [--txn-messages K,S,P]
  (run_peers.py KRETRY_BENCH_BIN [the same options])
  run_peers.py --table-from LOG: the table of the rows a log holds (each
  row's medians are logged as it is done), for a pass cut short

--runs: runs a side of every scenario (5); medians and ranges, and in the
JSON every run; each row's medians are also logged (stderr, "bench peers
row") as soon as the row is done. --only: some of tier_mem,paced,txn,
txn_kill,size,happy,retry_hop,dead_letter,delay,order,kill,parallel (all of
them, in that order, by default; happy: the happy path at --fail-percents, 0,1,5,
one row each, happy0, happy1, happy5; paced: the happy path's CPU at a
fixed rate, --paced-messages (30,000) produced at --paced-rate (1,000 a
second) once the side is assigned, every side; size: the happy path at 0 %
with values of --value-sizes bytes (1024,10240), one row each, size1024,
size10240, every side, --size-messages a run on every side (by default
sized per side and size, in main()); txn: every message dead-lettered, each side in its
transactional mode (kretry routing=transactional, kretry_bench's
dead_letter_txn; Spring's blocking retries in its Kafka transactions, as
its non-blocking retries cannot combine with container transactions;
Parallel Consumer's PERIODIC_TRANSACTIONAL_PRODUCER, its handler writing
the copies), --txn-messages by side; txn_kill: the kill row in those
modes, the dead-letter copies counted read_committed; order:
bench/peers/order_peers.py, per-key order during retries and the size of
a dead-letter copy). Sizes,
chosen so that every side's measured window is 10 s or more on a 2-core
machine: --kretry-messages, kretry's retry hop and dead-lettering
messages a run (1,500,000); --spring-messages, Spring's (5,000, both
configurations), after --spring-warmup more (1,000; Parallel Consumer's
happy path too); --happy-kretry-messages, kretry's happy path at every
percent (6,000,000 at 0 and 1 %, 2,500,000 at 5 %); --happy-peer-messages,
every peer's at every percent (by default sized per side and percent, in
main()); --delay-rate and --delay-messages, the
lateness input of kretry, of Spring's non-blocking retries and of Parallel
Consumer's retries in place (1 s retry delay), the same rate for all so
that their retries arrive at the same rate (100/s, 1,500:
15 s; Spring's non-blocking retries fell behind at 200/s on a loaded
2-core machine); --blocking-delay-messages, the same input for Spring's
blocking retries, whose 1 s back-off holds its partition (80: at most one
blocking retry a second a partition, 10 s at 8 partitions);
--mem-messages, the retries waiting in tier_mem, a list
(100000,1000000,5000000; the same on both sides), and --mem-partitions, the
partition counts (8,256): one row each pair, tier_mem_N_pP; the Spring JVMs
at -Xmx256m with Native Memory Tracking, a run that runs out of heap or
times out recorded as its outcome; Spring twice, at the Java client's
max.partition.fetch.bytes (1 MiB, "spring") and at 64 KiB
("spring_fetch64k": 256 paused partitions' fetched copies within the
heap); Parallel Consumer (UNORDERED, 16 threads) reading the same waiting
copies, each failing and held in its JVM for its hour, at the same heap, a
run whose input stops before all are consumed (20 s without a call)
recorded as its outcome. A throughput or lateness run whose window is under 10 s is flagged (MIN_WINDOW_S: a WARNING line, and
"window_short" in its JSON line).
KRETRY_PEERS_SIDES=a,b: only those sides in the throughput, lateness and
memory rows (kretry, spring, spring_blocking, spring_fetch64k, pc), to
re-run a row for one side.

Every throughput side (retry_hop, dead_letter, happy) has a discarded warm-up:
kretry's is kretry_bench's own warm-up run (`kretry_bench --only S
--messages N --runs 1` without --quick: one run of N discarded, then the
measured one; each run starts fresh processes on fresh topics, so what it
warms is the broker, the page cache and the machine, not kretry's process);
Spring's is --spring-warmup messages (1,000) done in the same JVM before its
window opens (the JIT, the client's buffers, the group's assignment), its
input holding warm-up + N. The delay and kill sides have none.
queued.min.messages is librdkafka's default, 100,000, on kretry's side
(KRETRY_BENCH_QUEUED_MIN), as the Java client has no such setting; each
peer side is one JVM per run on fresh topics and a fresh group, after the
harness produced the input in a separate JVM (so the peer's peak RSS is its
own, as in kretry_bench). Spring runs in two configurations: non-blocking
retries ("spring": a RetryTopicConfiguration at Spring's defaults) and
blocking retries ("spring_blocking": a DefaultErrorHandler with a
FixedBackOff and a DeadLetterPublishingRecoverer).
"""
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# the rows added last first (a pass cut short keeps them), then the rest
SCENARIOS = ["tier_mem", "paced", "txn", "txn_kill", "size", "happy",
             "retry_hop", "dead_letter", "delay", "order", "kill", "parallel"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)




# The shortest measured window a run may have (after its discarded warm-up):
# a run under it is flagged (a WARNING line on stderr, "window_short" in its
# JSON line, "windows_short" in its row), so that a pass shows which side's
# messages to raise.
MIN_WINDOW_S = 10.0
# Rows whose "secs" is no measured window: the parallel shape's fixed work.
NO_WINDOW = ("parallel",)


def measure_side(side, fn, rows, sc=None):
    """Run one side (@fn), its result with the 1-minute load before and
    after it appended to @rows[@side]; a failure is logged and the other
    sides' results stand. A window ("secs") under MIN_WINDOW_S is flagged."""
    load0 = os.getloadavg()[0]
    try:
        v = fn()
    except Exception as ex:
        log(f"  {side} failed: {ex}")
        return
    v["load"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    secs = v.get("secs")
    if sc not in NO_WINDOW and isinstance(secs, (int, float)):
        v["window_short"] = secs < MIN_WINDOW_S
        if v["window_short"]:
            log(f"bench peers WARNING: {sc} {side} run {len(rows.get(side, [])) + 1}: "
                f"window {secs:.1f} s < {MIN_WINDOW_S:.0f} s "
                f"({v.get('messages')} messages): raise its messages")
    log(f"  {json.dumps(v)}")
    rows.setdefault(side, []).append(v)

# Every peer JVM (Spring, Parallel Consumer; not the producer or the admin
# tools) runs with this fixed heap limit, so its memory is bounded as
# kretry's is by tier.buffer.total.bytes (64 MiB at its defaults).
HEAP = os.environ.get("KRETRY_PEERS_HEAP", "256m")
# A JVM out of heap exits at once (reported as the side's failure) instead
# of collecting for the rest of its timeout.
JVM = [f"-Xmx{HEAP}", "-XX:+ExitOnOutOfMemoryError"]
# The size rows (1 and 10 KB values) run every peer JVM at this heap: at
# 256m Parallel Consumer filled its heap with fetched 1 KB records and
# stalled, and ran out of heap at 10 KB (2026-12-05 13:25 and 14:06).
SIZE_HEAP = os.environ.get("KRETRY_PEERS_SIZE_HEAP", "2g")
# tier_mem's JVMs also track their native memory (read by jcmd
# VM.native_memory summary, in the JVM's JSON line)
NMT = ["-XX:NativeMemoryTracking=summary"]
# Spring: one consumer a partition (concurrency = the partition count of the
# scenario's topics), Spring's and the Java client's defaults otherwise.
PARTITIONS = 8


THROUGHPUT = ("retry_hop", "dead_letter", "happy")
# tier_mem's second Spring side: max.partition.fetch.bytes at 64 KiB, so
# that 256 paused partitions' fetched copies (1 MiB each at the Java
# client's default) fit its -Xmx256m
FETCH64K = 65536
SPRING_WARMUP = 1000  # --spring-warmup


def settings(side, sc):
    """What each side ran with, recorded in every run's JSON line."""
    tp = sc in THROUGHPUT
    if sc == "txn" or side.endswith("_txn"):
        return {"kretry": {"config": "kretry routing=transactional "
                           "(transaction.interval.ms 100, its default)",
                           "timer_slack_ns": 1, "tier_buffer_total_bytes": 64 << 20,
                           "warmup": "one discarded kretry_bench run of the same "
                                     "size, fresh processes",
                           "queued_min_messages": 100000,
                           "commit": "transaction.interval.ms 100"},
                "kretry_txn": {"config": "peers_kill_worker routing=transactional",
                               "commit": "transaction.interval.ms 100"},
                "spring_txn": {"config": "KafkaTransactionManager, "
                               "DefaultAfterRollbackProcessor(DeadLetterPublishingRecoverer, "
                               "FixedBackOff(delay, 1), template, commitRecovered true)",
                               "concurrency": 3 if sc == "kill" else PARTITIONS,
                               "heap_max": HEAP, "warmup": f"{SPRING_WARMUP} messages "
                               "discarded, same JVM" if sc == "txn" else False,
                               "retry_delay_ms": 30 if sc == "kill" else 0},
                "pc_txn": {"config": "pc: PERIODIC_TRANSACTIONAL_PRODUCER, "
                           "ordering KEY, the handler's dead-letter copies by "
                           "pollAndProduceMany", "heap_max": HEAP,
                           "commit_interval_ms": 100,
                           "concurrency": 1 if sc == "kill" else 16,
                           "retry_delay_ms": 30 if sc == "kill" else 0,
                           "warmup": f"{SPRING_WARMUP} messages discarded, same JVM"
                                     if sc == "txn" else False}}[side]
    if side == "kretry":
        return {"config": "kretry defaults (kretry_bench)", "timer_slack_ns": 1,
                "commit_interval_ms": 100 if sc == "kill" else 5000,
                "retry_delay_ms": {"delay": 1000, "kill": 30,
                                   "tier_mem": 3600000}.get(sc, 0),
                "tier_buffer_total_bytes": 64 << 20,
                "warmup": "one discarded kretry_bench run of the same size, "
                          "fresh processes" if tp else False,
                "queued_min_messages": 100000}
    if side == "spring_blocking":
        return {"config": "DefaultErrorHandler(DeadLetterPublishingRecoverer, "
                "FixedBackOff(delay, 1)), Spring defaults otherwise",
                "concurrency": 3 if sc == "kill" else PARTITIONS,
                "commit": "AckMode BATCH", "heap_max": HEAP,
                "warmup": f"{SPRING_WARMUP} messages discarded, same JVM"
                          if tp else False,
                "retry_delay_ms": {"delay": 1000, "kill": 30}.get(sc, 0)}
    if side == "spring_fetch64k":
        return dict(settings("spring", sc), max_partition_fetch_bytes=FETCH64K,
                    config="RetryTopicConfiguration, max.partition.fetch.bytes "
                    f"{FETCH64K}, Spring defaults otherwise")
    if side == "spring":
        return {"config": "RetryTopicConfiguration, Spring defaults",
                "warmup": f"{SPRING_WARMUP} messages discarded, same JVM"
                          if tp else False,
                "concurrency": {"kill": 3, "tier_mem": 1, "parallel": 16}.get(sc, PARTITIONS),
                "commit": "AckMode BATCH, commitRecovered", "heap_max": HEAP,
                **({"jvm_flags": JVM + NMT} if sc == "tier_mem" else {}),
                "retry_delay_ms": {"delay": 1000, "kill": 30,
                                   "tier_mem": 3600000}.get(sc, 0)}
    if sc == "tier_mem":
        return {"config": "pc: ordering UNORDERED, maxConcurrency 16, "
                "PERIODIC_CONSUMER_ASYNCHRONOUS, every message failing, its "
                "retry held in the JVM; reads Spring's waiting copies",
                "heap_max": HEAP, "jvm_flags": JVM + NMT, "commit_interval_ms": 100,
                "retry_delay_ms": 3600000, "warmup": False}
    if sc in ("happy", "retry_hop", "dead_letter", "delay"):  # its defaults
        return {"config": "pc: ordering KEY, maxConcurrency 16 (its defaults), "
                "PERIODIC_CONSUMER_ASYNCHRONOUS" + {
                    "retry_hop": ", every message failing once, retried in place",
                    "dead_letter": ", its handler writing every message's copy "
                                   "to SOURCE-dlt by pollAndProduceMany",
                    "delay": ", retried in place"}.get(sc, ""),
                "heap_max": HEAP, "commit_interval_ms": 100,
                "retry_delay_ms": 1000 if sc == "delay" else 0,
                "warmup": False if sc == "delay" else
                          f"{SPRING_WARMUP} messages discarded, same JVM"}
    return {"config": "pc " + side, "heap_max": HEAP,
            "commit_interval_ms": 5000 if side == "pc_defaults" else 100,
            "retry_delay_ms": 1000 if side == "pc_defaults" else 30}


def cp(module):
    return f"{HERE}/{module}/target/classes:{HERE}/{module}/target/lib/*"


def java(module, main, props, timeout=900, check=True, heap=None):
    jvm = [f"-Xmx{heap}", "-XX:+ExitOnOutOfMemoryError"] if heap else JVM
    cmd = ["java"] + (["-XX:+UseSerialGC"] if main.endswith("Produce") else jvm) + \
        ["-cp", cp(module)]
    cmd += [f"-Dbench.{k}={v}" for k, v in props.items()] + [main]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    err = "\n".join(l for l in r.stderr.splitlines()
                    if not l.startswith("SLF4J") and "ready" not in l)
    if err.strip():
        log(err[-2000:])
    if check and r.returncode != 0:
        raise RuntimeError(f"{main} exited {r.returncode}")
    return r.stdout


def last_json(out):
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line in: " + out[-500:])


class Harness:
    def __init__(self, kbin, boot):
        self.kbin, self.boot, self.seq = kbin, boot, 0

    def name(self, what):
        self.seq += 1
        return f"peers-{what}-{os.getpid()}-{int(time.time())}-{self.seq}"

    def topics(self, verb, parts, names):
        args = ["java", "-cp", cp("common") + ":" + cp("pc"), "kretry.peers.Topics",
                verb, self.boot] + ([str(parts)] if verb == "create" else []) + names
        subprocess.run(args, check=verb == "create", stderr=subprocess.DEVNULL)

    def produce(self, topic, n, **kw):
        java("pc", "kretry.peers.Produce",
             dict(bootstrap=self.boot, topic=topic, messages=n, **kw))

    def kretry(self, args):
        # queued.min.messages at librdkafka's default: no Java side has it
        env = dict(os.environ, KRETRY_BENCH_BOOTSTRAP=self.boot,
                   KRETRY_BENCH_QUEUED_MIN="100000")
        r = subprocess.run([self.kbin] + args + ["--output", "json"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=1800)
        if r.returncode != 0:
            log(r.stderr[-2000:])
            raise RuntimeError("kretry_bench failed")
        return json.loads(r.stdout)

    # --- one run of each side --------------------------------------------
    def kretry_throughput(self, sc, n):
        # without --quick: kretry_bench's warm-up run of n, discarded, then
        # the measured run; --messages sizes the window
        s = self.kretry(["--only", sc, "--runs", "1", "--messages",
                         str(n)])["scenarios"][0]
        return {"msgs_per_s": s["kretry_msgs_per_s"], "cpu_us_per_msg":
                s["kretry_cpu_us_per_msg"], "peak_rss_kb": s["peak_rss_kb"],
                "messages": n, "secs": n / s["kretry_msgs_per_s"],
                "raw_msgs_per_s": s.get("raw_msgs_per_s"),
                "ratio_to_raw": s.get("ratio"),
                "load_max": s["load_max"]}

    def kretry_happy(self, pct, n, value_bytes=100):
        """The happy path with pct % failures: kretry_bench's happy at 0,
        its retry_hop with --retry-percent otherwise (the chosen messages
        retried once through the 0 ms tier), after its warm-up run; input
        values of value_bytes."""
        args = ["--only", "happy"] if pct == 0 else \
            ["--only", "retry_hop", "--retry-percent", str(pct)]
        s = self.kretry(args + ["--runs", "1", "--messages", str(n),
                                "--value-bytes", str(value_bytes)])["scenarios"][0]
        return {"msgs_per_s": s["kretry_msgs_per_s"], "cpu_us_per_msg":
                s["kretry_cpu_us_per_msg"], "peak_rss_kb": s["peak_rss_kb"],
                "messages": n, "secs": n / s["kretry_msgs_per_s"],
                "raw_msgs_per_s": s.get("raw_msgs_per_s"),
                "ratio_to_raw": s.get("ratio"), "fail_pct": pct,
                "value_bytes": value_bytes, "load_max": s["load_max"]}

    def peer_happy(self, side, pct, n, value_bytes=100):
        t = self.name(f"happy{pct}")
        names = [t] + ([t + "-retry", t + "-dlt"] if side == "spring" else [])
        self.topics("create", 8, names)
        try:
            props = dict(bootstrap=self.boot, topic=t, group=t + "-g",
                         messages=n, warmup=SPRING_WARMUP, fail_pct=pct)
            self.produce(t, SPRING_WARMUP + n, value_bytes=value_bytes)
            module, main = happy_main(side, props)
            v = last_json(java(module, main, props,
                               heap=SIZE_HEAP if value_bytes != 100 else None))
            v["fail_pct"] = pct
            v["value_bytes"] = value_bytes
            return v
        finally:
            self.topics("delete", 0, names)

    def kretry_paced(self, n, rate):
        """kretry_bench's happy_paced: n messages produced at rate once its
        adapter is assigned, each OK at once; the window and its CPU."""
        d = self.kretry(["--quick", "--only", "happy_paced", "--runs", "1",
                         "--messages", str(n), "--rate", str(rate)])["happy_paced"]
        return {"messages": n, "rate": rate, "secs": d["secs"],
                "cpu_s": d["cpu_s"], "cpu_us_per_msg": d["cpu_us_per_msg"],
                "peak_rss_kb": d["peak_rss_kb"], "load_max": d["load_max"]}

    def peer_paced(self, side, n, rate):
        """The peer's happy path (0 % failures) on 1,000 warm-up messages
        and n more, all produced at rate once its partitions are assigned:
        the window (from the 1,000th done to the last) and its CPU, the
        paced input's steady state."""
        t = self.name("paced")
        names = [t] + ([t + "-retry", t + "-dlt"] if side == "spring" else [])
        self.topics("create", PARTITIONS, names)
        try:
            props = dict(bootstrap=self.boot, topic=t, group=t + "-g",
                         messages=n, warmup=SPRING_WARMUP, fail_pct=0)
            module, main = happy_main(side, props)
            v = self.java_paced(module, main, props, t, SPRING_WARMUP + n, rate)
            v["rate"] = rate
            v["cpu_s"] = v["cpu_us_per_msg"] * n / 1e6
            return v
        finally:
            self.topics("delete", 0, names)

    def java_paced(self, module, main, props, t, n, rate):
        """A peer JVM that says "...: ready" on stderr once assigned, then
        its input: n messages produced at rate."""
        cmd = ["java"] + JVM + ["-cp", cp(module)] + \
            [f"-Dbench.{k}={v}" for k, v in props.items()] + [main]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        for line in p.stderr:  # the producer starts once it is assigned
            if ": ready" in line:
                break
        self.produce(t, n, rate=rate)
        out, err = p.communicate(timeout=900)
        return last_json(out)

    def kretry_txn(self, n):
        """kretry_bench's dead_letter_txn after its warm-up run: kretry with
        routing=transactional, kretry at least once and raw librdkafka on
        the same input."""
        s = self.kretry(["--only", "dead_letter_txn", "--runs", "1",
                         "--messages", str(n)])["scenarios"][0]
        return {"msgs_per_s": s["kretry_msgs_per_s"], "cpu_us_per_msg":
                s["kretry_cpu_us_per_msg"], "peak_rss_kb": s["peak_rss_kb"],
                "messages": n, "secs": n / s["kretry_msgs_per_s"],
                "at_least_once_msgs_per_s": s["baseline_msgs_per_s"],
                "at_least_once_cpu_us_per_msg": s["baseline_cpu_us_per_msg"],
                "raw_msgs_per_s": s["raw_msgs_per_s"],
                "transactions": s["transactions_committed"],
                "transactions_aborted": s["transactions_aborted"],
                "load_max": s["load_max"]}

    def pc_dead_letter(self, n, txn=True):
        """PcDeadLetter: every message written to SOURCE-dlt by the handler,
        PERIODIC_TRANSACTIONAL_PRODUCER (txn), after 1,000 warm-up
        messages."""
        t = self.name("pcdl")
        names = [t, t + "-dlt"]
        self.topics("create", PARTITIONS, names)
        try:
            self.produce(t, SPRING_WARMUP + n)
            props = dict(bootstrap=self.boot, topic=t, group=t + "-g",
                         messages=n, warmup=SPRING_WARMUP, commit_interval_ms=100,
                         retry_delay_ms=0,
                         concurrency=16, ordering="KEY")
            if txn:
                props["commit_mode"] = "transactional"
            return last_json(java("pc", "kretry.peers.pc.PcDeadLetter", props))
        finally:
            self.topics("delete", 0, names)

    def kretry_delay(self, n, rate):
        d = self.kretry(["--quick", "--only", "delay", "--runs", "1",
                         "--messages", str(n), "--rate", str(rate)])["delay"]
        d["rate"] = rate
        return d

    def pc_delay(self, n, rate):
        """Parallel Consumer's retries in place through its 1 s retry delay:
        n messages produced at rate once it is assigned, each failing its
        first attempt; lateness from its own due time and the input's."""
        t = self.name("delay")
        self.topics("create", PARTITIONS, [t])
        try:
            props = dict(bootstrap=self.boot, topic=t, group=t + "-g",
                         messages=n, retry_delay_ms=1000, commit_interval_ms=100)
            v = self.java_paced("pc", "kretry.peers.pc.PcDelay", props, t, n, rate)
            v["rate"] = rate
            return v
        finally:
            self.topics("delete", 0, [t])

    def kretry_parallel(self):
        # --quick at 10,000 messages: the three orderings at 16 handlers only
        p = self.kretry(["--quick", "--only", "parallel", "--messages",
                         "10000", "--runs", "1"])["parallel"]
        return {c["ordering"]: {"secs": c["secs"], "slept_us":
                c["slept_us_per_msg"]} for c in p["combinations"]
                if c["concurrency"] == 16}

    def spring(self, sc, n, rate=0, mode="nonblocking", txn=False):
        t = self.name(sc)
        names = [t, t + "-retry", t + "-dlt"]
        self.topics("create", 8, names)
        try:
            props = dict(bootstrap=self.boot, topic=t, group=t + "-g",
                         messages=n, concurrency=PARTITIONS, mode=mode)
            if txn:  # blocking retries in Spring's Kafka transactions
                props["txn"] = "true"
            main = {"delay": "SpringDelay", "retry_hop": "SpringRetryHop",
                    "dead_letter": "SpringDeadLetter"}[sc]
            if sc == "delay":
                props["delay_ms"] = 1000
                v = self.spring_delay(props, t, n, rate)
                v["rate"] = rate
                return v
            # the warm-up's messages first, done in the same JVM before its
            # window opens
            props["warmup"] = SPRING_WARMUP
            self.produce(t, SPRING_WARMUP + n)
            return last_json(java("spring", "kretry.peers.spring." + main, props))
        finally:
            self.topics("delete", 0, names)

    def spring_delay(self, props, t, n, rate):
        # the producer starts once both are assigned
        return self.java_paced("spring", "kretry.peers.spring.SpringDelay",
                               props, t, n, rate)

    def kretry_tier_mem(self, n, parts):
        """kretry_bench's tier_mem at n waiting and parts partitions (its
        router, then the waiting adapter beside the baseline one); a failed
        run is an outcome, not a missing run."""
        t0 = time.time()
        try:
            m = self.kretry(["--only", "tier_mem", "--runs", "1", "--messages",
                             str(n), "--mem-partitions", str(parts)])["tier_memory"]
        except (RuntimeError, subprocess.TimeoutExpired) as ex:
            return {"messages": n, "partitions": parts, "outcome": f"failed: {ex}",
                    "run_s": round(time.time() - t0, 1)}
        if m.get("rss_waiting_kb") is None:
            return {"messages": n, "partitions": parts,
                    "outcome": "failed: " + str(m.get("error")),
                    "run_s": round(time.time() - t0, 1)}
        v = {k: m[k] for k in ("messages", "partitions", "rss_empty_kb",
                               "rss_waiting_kb", "rss_growth_kb",
                               "bytes_per_waiting_msg", "hwm_empty_kb",
                               "hwm_waiting_kb", "load_max")}
        v["outcome"] = "held"
        v["run_s"] = round(time.time() - t0, 1)
        return v

    def spring_tier_fill(self, n, parts):
        """n copies written into SOURCE-retry (SpringTierFill) and an empty
        set of topics beside them, parts partitions each, once for all the
        runs of a row: each run reads them in a fresh group, so what waits
        is the same every run."""
        if getattr(self, "mem_topics", None) is None:
            t, e = self.name("mem"), self.name("mem-empty")
            names = [x + s for x in (t, e) for s in ("", "-retry", "-dlt")]
            self.topics("create", parts, names)
            self.mem_topics = (t, e, names)
            t0 = time.time()
            java("spring", "kretry.peers.spring.SpringTierFill",
                 dict(bootstrap=self.boot, topic=t, messages=n), timeout=3600)
            log(f"  spring tier fill: {n:,} copies in {parts} partitions, "
                f"{time.time() - t0:.1f} s")
        return self.mem_topics

    def drop_tier_fill(self):
        if getattr(self, "mem_topics", None) is not None:
            self.topics("delete", 0, self.mem_topics[2])
            self.mem_topics = None

    def spring_tier_mem(self, n, parts, fetch=None):
        """Spring on the waiting copies (its retry partitions paused until
        due) beside Spring on the empty topics: jvm_tier_mem."""
        t, e, _ = self.spring_tier_fill(n, parts)
        extra = {"max_partition_fetch_bytes": fetch} if fetch else {}
        extra["delay_ms"] = 3600000
        return self.jvm_tier_mem(
            "spring", "kretry.peers.spring.SpringTierMem", n, parts,
            [dict(topic=t, paused=parts, **extra), dict(topic=e, paused=0, **extra)])

    def pc_tier_mem(self, n, parts):
        """Parallel Consumer reading the same waiting copies as Spring (the
        n records in SOURCE-retry: each fails, its retry an hour away, held
        in the JVM) beside one reading the empty topic: jvm_tier_mem."""
        t, e, _ = self.spring_tier_fill(n, parts)
        p = dict(commit_interval_ms=100, retry_delay_ms=3600000, concurrency=16,
                 ordering="UNORDERED")
        return self.jvm_tier_mem("pc", "kretry.peers.pc.PcTierMem", n, parts,
                                 [dict(topic=t + "-retry", messages=n, **p),
                                  dict(topic=e + "-retry", messages=0, **p)])

    def jvm_tier_mem(self, module, main, n, parts, sides):
        """One JVM with the n waiting and one on the empty topics, at the
        same time, each in a fresh group, both at -Xmx HEAP with Native
        Memory Tracking: RSS, heap after a full GC and NMT's committed
        memory of both. A JVM that runs out of heap (it exits at once:
        -XX:+ExitOnOutOfMemoryError), fails or times out is the run's
        outcome, recorded, not a missing run; so is a Parallel Consumer that
        stops taking input before all n are consumed."""
        t0 = time.time()
        procs = []
        for props in sides:
            props = dict(bootstrap=self.boot, group=self.name("mem-g"), **props)
            procs.append(subprocess.Popen(
                ["java"] + JVM + NMT + ["-cp", cp(module)] +
                [f"-Dbench.{k}={v}" for k, v in props.items()] + [main],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        res = []
        for p in procs:
            try:
                out, err = p.communicate(timeout=900)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                res.append({"outcome": "timed out after 900 s"})
                continue
            if p.returncode != 0:
                # -XX:+ExitOnOutOfMemoryError: "Terminating due to
                # java.lang.OutOfMemoryError: ..." on the JVM's stdout, exit 3
                oom = "OutOfMemoryError" in out + err
                res.append({"outcome": f"exit {p.returncode}" +
                            (" (out of heap at -Xmx" + HEAP + ")" if oom else ""),
                            "stderr_tail": (out + err)[-300:]})
                continue
            j = last_json(out)
            res.append(dict(j, outcome="held" if "consumed" not in j or j["held"]
                            else f"input stopped at {j['consumed']:,} of {n:,}"))
        w, em = res
        v = {"messages": n, "partitions": parts, "heap_max": HEAP,
             "run_s": round(time.time() - t0, 1),
             "outcome": w["outcome"], "outcome_empty": em["outcome"]}
        if "rss_kb" not in w or "rss_kb" not in em:
            v["stderr_tail"] = w.get("stderr_tail") or em.get("stderr_tail")
            return v
        g = w["rss_kb"] - em["rss_kb"]
        nmt_w, nmt_e = w.get("nmt") or {}, em.get("nmt") or {}
        v.update({"rss_empty_kb": em["rss_kb"], "rss_waiting_kb": w["rss_kb"],
                  "rss_growth_kb": g, "bytes_per_waiting_msg": g * 1024 / n,
                  "hwm_empty_kb": em.get("hwm_kb"), "hwm_waiting_kb": w.get("hwm_kb"),
                  "heap_after_gc_kb": w.get("heap_after_gc_kb"),
                  "heap_after_gc_empty_kb": em.get("heap_after_gc_kb"),
                  "heap_committed_kb": w.get("heap_committed_kb"),
                  "heap_max_kb": w.get("heap_max_kb"),
                  "nmt_committed_kb": nmt_w.get("total_committed_kb"),
                  "nmt_committed_empty_kb": nmt_e.get("total_committed_kb"),
                  "nmt": nmt_w.get("committed_by_category") or nmt_w.get("error"),
                  "nmt_empty": nmt_e.get("committed_by_category") or nmt_e.get("error"),
                  # false: not every retry partition paused in time (Spring),
                  # or not all n consumed (Parallel Consumer)
                  "held": w.get("held"),
                  "load_max": max(w["load_max"], em["load_max"])})
        for k in ("paused", "consumed"):
            if k in w:
                v[k] = w[k]
        return v

    def pc_parallel(self, ordering):
        t = self.name("par")
        self.topics("create", 1, [t])
        try:
            self.produce(t, 10000, keys=1000, key_digits=3)
            j = last_json(java("pc", "kretry.peers.pc.PcParallel", dict(
                bootstrap=self.boot, topic=t, group=t + "-g", messages=10000,
                ordering=ordering, concurrency=16)))
            return {"secs": j["secs"], "slept_us": j["slept_us"]}
        finally:
            self.topics("delete", 0, [t])

    def spring_parallel(self):
        t = self.name("spar")
        self.topics("create", 1, [t])
        try:
            self.produce(t, 10000, keys=1000, key_digits=3)
            j = last_json(java("spring", "kretry.peers.spring.SpringParallel", dict(
                bootstrap=self.boot, topic=t, group=t + "-g", messages=10000,
                concurrency=16)))
            return {"secs": j["secs"], "slept_us": j["slept_us"]}
        finally:
            self.topics("delete", 0, [t])


def happy_main(side, props):
    """The peer's happy-path entry point, its configuration added to
    @props: Parallel Consumer at its ordering and concurrency defaults with
    100 ms commits and no retry delay, Spring at one consumer a partition."""
    if side == "pc":
        props.update(commit_interval_ms=100, retry_delay_ms=0,
                     concurrency=16, ordering="KEY")
        return "pc", "kretry.peers.pc.PcHappy"
    props.update(concurrency=PARTITIONS, mode="blocking"
                 if side == "spring_blocking" else "nonblocking")
    return "spring", "kretry.peers.spring.SpringHappy"


def run_side(h, sc, side, o):
    if sc == "txn":  # every message dead-lettered, each side transactional
        v = h.kretry_txn(o["txn_n"]["kretry"]) if side == "kretry" else \
            h.spring("dead_letter", o["txn_n"][side], mode="blocking", txn=True) \
            if side == "spring_txn" else h.pc_dead_letter(o["txn_n"][side])
        v["settings"] = settings(side, "txn")
        return v
    if sc == "paced":  # the happy path's CPU at a fixed rate
        v = h.kretry_paced(o["paced_n"], o["paced_rate"]) if side == "kretry" \
            else h.peer_paced(side, o["paced_n"], o["paced_rate"])
        v["settings"] = dict(settings(side, "happy"), rate=o["paced_rate"],
                             messages=o["paced_n"])
        if side == "kretry":  # a C process: no JIT to warm
            v["settings"]["warmup"] = False
        return v
    if sc.startswith("size"):  # size1024, size10240: bytes a value, 0 %
        vb = int(sc[4:])
        n = o["size_n"][side].get(vb, 200000)
        v = h.kretry_happy(0, n, vb) if side == "kretry" else \
            h.peer_happy(side, 0, n, vb)
        v["settings"] = dict(settings(side, "happy"), value_bytes=vb)
        if side != "kretry":
            v["settings"]["heap_max"] = SIZE_HEAP
        return v
    if sc.startswith("happy"):  # happy0, happy1, happy5: the failure percent
        pct = int(sc[5:])
        v = h.kretry_happy(pct, o["happy_kretry_n"].get(pct, 6000000)) \
            if side == "kretry" else \
            h.peer_happy(side, pct, o["happy_peer_n"][side].get(pct, 100000))
        v["settings"] = settings(side, "happy")
        return v
    if side == "kretry":
        v = {"delay": lambda: h.kretry_delay(o["delay_n"], o["rate"]),
             "parallel": h.kretry_parallel}.get(
            sc, lambda: h.kretry_throughput(sc, o["kretry_n"]))()
    elif side == "pc" and sc == "retry_hop":  # every message fails once
        v = h.peer_happy("pc", 100, o["pc_n"]["retry_hop"])
    elif side == "pc" and sc == "dead_letter":  # its handler's copies
        v = h.pc_dead_letter(o["pc_n"]["dead_letter"], txn=False)
    elif side == "pc" and sc == "delay":
        v = h.pc_delay(o["delay_n"], o["rate"])
    elif side == "pc":
        v = {o.lower(): h.pc_parallel(o)
             for o in ("UNORDERED", "KEY", "PARTITION")}
    elif sc == "parallel":
        v = h.spring_parallel()
    elif side == "spring_blocking":
        v = h.spring(sc, o["blocking_delay_n"] if sc == "delay" else o["spring_n"],
                     rate=o["rate"], mode="blocking")
    elif sc == "delay":
        v = h.spring(sc, o["delay_n"], rate=o["rate"])
    else:
        v = h.spring(sc, o["spring_n"])
    v["settings"] = settings(side, sc)
    return v


SIDES_TIER_MEM = ("kretry", "spring", "spring_fetch64k", "pc")


def chosen(sides):
    """@sides, only those in KRETRY_PEERS_SIDES=a,b when it is set (a row
    re-run for one side whose window was too short)."""
    only = os.environ.get("KRETRY_PEERS_SIDES")
    return [x for x in sides if not only or x in only.split(",")]


def tier_mem(h, runs, n, parts, sc="tier_mem"):
    """Memory with n waiting in parts partitions, runs times a side, the
    sides alternating: the medians of the runs that held, each figure's
    range over them, and every run's outcome ("held", or how it failed:
    out of heap, timed out)."""
    rows = {}
    for r in range(runs):
        for side in chosen(SIDES_TIER_MEM)[::1 if r % 2 == 0 else -1]:
            log(f"bench peers {sc} run {r + 1}/{runs}: {side}")
            fn = {"kretry": h.kretry_tier_mem, "spring": h.spring_tier_mem,
                  "spring_fetch64k": lambda n, p: h.spring_tier_mem(n, p, FETCH64K),
                  "pc": h.pc_tier_mem}[side]
            measure_side(side, lambda: dict(fn(n, parts),
                                            settings=settings(side, "tier_mem")), rows)
            v = rows.get(side, [{}])[-1]
            if v.get("outcome", "held") != "held":
                log(f"  {side} at {n:,} waiting, {parts} partitions: {v['outcome']}")
    out = {}
    for side, rs in rows.items():
        held = [x for x in rs if x.get("outcome") == "held"]
        out[side] = {"messages": n, "partitions": parts, "runs": len(rs),
                     "runs_held": len(held),
                     "outcomes": [x.get("outcome") for x in rs],
                     "settings": rs[0].get("settings")}
        if held:
            keys = [k for k, v in held[0].items() if isinstance(v, (int, float))
                    and not isinstance(v, bool)]
            out[side].update({k: med(held, k) for k in keys})
            out[side]["range"] = {k: [min(x[k] for x in held), max(x[k] for x in held)]
                                  for k in keys if all(k in x for x in held)}
        out[side]["per_run"] = rs
    return out


ROW_T0 = [time.time()]  # when the current row started


def log_row(sc, out):
    """A row's medians on stderr as soon as it is done: a pass cut short
    keeps what it finished (run_peers.py --table-from LOG); with the row's
    wall time ("row_s") and the time it ended (UTC), to size a pass."""
    log(f"bench peers row {sc}: " + json.dumps({
        "row": out, "load": os.getloadavg()[0],
        "row_s": round(time.time() - ROW_T0[0], 1),
        "ended": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}))


def rows_from_log(path):
    """The "start" and "row" lines of a log, as main()'s result."""
    res = {}
    for line in open(path):  # (Maven's output may share the start's line)
        if "bench peers start: " in line:
            res.update(json.loads(line.split("bench peers start: ", 1)[1]))
        elif "bench peers row " in line:
            sc, body = line.split("bench peers row ", 1)[1].split(": ", 1)
            r = json.loads(body)
            res[sc] = r["row"]
            res["load_end"] = r["load"]
    res.setdefault("load_end", res.get("load_start", 0))
    return res


def med(rows, key):
    v = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(v) if v else None


def main():
    a = sys.argv[1:]
    if "--help" in a or "-h" in a:
        print(__doc__.split("\n\n", 1)[1].strip())
        return
    if a and a[0] == "--table-from":  # a log's rows, as the table
        print_table(rows_from_log(a[1]))
        return
    kbin, runs, only, fmt = a[0], 5, SCENARIOS, "table"
    global SPRING_WARMUP
    o = {"kretry_n": 1500000, "spring_n": 5000,
         # kretry at 0 %: 26,000,000 since 2026-12-06 06:10, 12 s at the
         # fastest rate seen (6,000,000 gave 10.0-13.0 s at 462,704-602,328
         # msgs/s at 01:20; 7,500,000 3.5-9.0 s at 836,798-2,156,232 at
         # 05:51)
         "happy_kretry_n": {0: 26000000, 1: 6000000, 5: 2500000},
         "fail_pcts": "0,1,5", "rate": 100, "delay_n": 1500,
         "blocking_delay_n": 80, "mem_n": "100000,1000000,5000000",
         "mem_parts": "8,256",
         "paced_rate": 1000, "paced_n": 30000, "value_sizes": "1024,10240",
         # the transactional row's messages a run, by side, for windows of
         # 10 s (600,000 / 1,500 / 20,000 on 2026-12-05 13:36: 4.7-6.3 s;
         # 1,500,000 / 3,000 / 50,000 at 16:11: 12.1-18.8, 10.3-23.3 and
         # 9.2-32.9 s, hence 3,600 and 70,000; at 22:25, load 3-4, 12.3, 12.1
         # and 10.1 s, Parallel Consumer at 6,960 msgs/s, hence 85,000)
         "txn_n": {"kretry": 1500000, "spring_txn": 3600, "pc_txn": 85000},
         # Parallel Consumer's retry hop (every message failing once,
         # retried in place) and dead-lettering (its handler writing the
         # copies), since 2026-12-06: sized from its happy rows (27,000
         # msgs/s at 5 %) and its transactional dead-lettering (7,300); a
         # one-run check on 2026-12-06 03:43: 16,800 and 9,400 msgs/s
         "pc_n": {"retry_hop": 250000, "dead_letter": 150000}}
    sizes = {"--kretry-messages": "kretry_n", "--spring-messages": "spring_n",
             "--delay-rate": "rate", "--delay-messages": "delay_n",
             "--blocking-delay-messages": "blocking_delay_n",
             "--paced-rate": "paced_rate",
             "--paced-messages": "paced_n"}
    i = 1
    while i < len(a):
        if a[i] == "--runs":
            runs = int(a[i + 1])
        elif a[i] == "--only":
            only = a[i + 1].split(",")
        elif a[i] == "--output":
            fmt = a[i + 1]
        elif a[i] == "--fail-percents":
            o["fail_pcts"] = a[i + 1]
        elif a[i] == "--mem-messages":  # tier_mem's waiting counts
            o["mem_n"] = a[i + 1]
        elif a[i] == "--mem-partitions":  # tier_mem's partition counts
            o["mem_parts"] = a[i + 1]
        elif a[i] == "--value-sizes":
            o["value_sizes"] = a[i + 1]
        elif a[i] == "--size-messages":  # every side at every value size
            o["size_override"] = int(a[i + 1])
        elif a[i] == "--txn-messages":  # kretry,spring_txn,pc_txn
            o["txn_n"] = dict(zip(("kretry", "spring_txn", "pc_txn"),
                                  (int(x) for x in a[i + 1].split(","))))
        elif a[i] == "--happy-kretry-messages":  # at every percent
            o["happy_kretry_n"] = {p: int(a[i + 1]) for p in range(101)}
        elif a[i] == "--happy-peer-messages":  # spring,spring_blocking,pc at 0,1,5 %
            o["happy_peer_override"] = int(a[i + 1])
        elif a[i] == "--spring-warmup":
            SPRING_WARMUP = int(a[i + 1])
        elif a[i] in sizes:
            o[sizes[a[i]]] = int(a[i + 1])
        else:
            sys.exit(f"bench/run --peers: unknown option {a[i]}")
        i += 2
    boot = os.environ.get("KRETRY_BENCH_BOOTSTRAP")
    if not boot:
        sys.exit("bench/run --peers: set KRETRY_BENCH_BOOTSTRAP to a real broker "
                 "(scripts/kafka.sh start prints it)")
    log("bench peers: building bench/peers (mvn -q -B package)...")
    subprocess.run(["mvn", "-q", "-B", "package"], cwd=HERE, check=True,
                   stdout=sys.stderr)
    # each peer's happy-path input, sized to a window of 10 s or more at
    # its rate on this machine (msgs a run, after the warm-up)
    # (after the warm-up a JVM runs its happy path ten times faster than in
    # a cold 5,000-message trial: 65,000-280,000 msgs/s at 0 %; Spring's
    # windows at 0 % were 5.5-9.9 s at 1,500,000 and 3,000,000 messages
    # when it ran 274,000 and 371,000 msgs/s, hence 4,000,000 and 5,000,000)
    # (2026-12-05 16:11, load 4-43: windows of 9.8-33.3 s for Spring at 0 %
    # (4,000,000), 10.4-20.0 s for its blocking retries (5,000,000), 9.8-11.7 s
    # for them at 5 % (70,000), 10.8-11.9 s for Spring at 5 % (50,000), 6.7-8.8
    # and 6.4-8.5 s for Parallel Consumer at 1 and 5 % (150,000 at 17,000-
    # 23,000 msgs/s), 11.0-23.2 s for it at 0 % (300,000): each raised to a
    # window of 12 s or more at the fastest rate seen; a one-run check at
    # 22:18, load 2-7, gave 10.6-15.0 s, Spring at 0 % 465,000 msgs/s and
    # Parallel Consumer at 1 and 5 % 28,200 and 26,600, hence 5,600,000,
    # 350,000 and 330,000); the pass of 2026-12-06 01:20 (load 0.2-6.0)
    # ran Spring at 1 and 5 % in 8.8-9.4 and 9.7-10.2 s (up to 22,796 and
    # 6,218 msgs/s) and its blocking retries at 1 % in 9.9-10.8 s (up to
    # 35,264), hence 280,000, 75,000 and 430,000 (12 s at those rates)
    o["happy_peer_n"] = {"spring": {0: 5600000, 1: 280000, 5: 75000},
                         "spring_blocking": {0: 6000000, 1: 430000, 5: 85000},
                         "pc": {0: 400000, 1: 350000, 5: 330000}}
    if o.get("happy_peer_override"):
        for v in o["happy_peer_n"].values():
            for p in list(v) + [int(x) for x in o["fail_pcts"].split(",")]:
                v[p] = o["happy_peer_override"]
    # the happy path at 0 % with larger values: each side's messages a run
    # by value size, for windows of 10 s or more (as happy_peer_n)
    # (a one-run trial of 50,000 on 2026-12-05 13:25, load 5-7: kretry
    # 907,000 and 235,000 msgs/s at 1 and 10 KB on windows under 0.3 s,
    # Spring 48,000-72,000 and 24,000-30,000, Parallel Consumer 16,700 at
    # 1 KB and out of heap at 10 KB at -Xmx256m)
    # (2026-12-05 16:11, load 5-33: 1 KB: kretry 6.8-7.1 s at 4,000,000,
    # 567,000-585,000 msgs/s; Spring 5.1-6.2 s at 700,000, 114,000-138,000;
    # its blocking retries 4.5-4.7 s at 900,000, 193,000-199,000; Parallel
    # Consumer 11.1-13.0 s at 200,000; 10 KB: kretry 12.5-15.6 s at
    # 1,000,000, 64,000-80,000 msgs/s against raw librdkafka's 92,000;
    # Spring 6.2-12.8 s at 300,000, up to 48,000; blocking 9.2-14.3 s at
    # 350,000, up to 38,000; Parallel Consumer 5.3-7.1 s at 50,000, up to
    # 9,400; on 2026-12-05 22:00, load 2-10, every side much faster: 1 KB:
    # kretry 1,589,000 msgs/s, Spring 227,000 (340,000 at 2,800,000),
    # blocking 386,000, Parallel Consumer 26,100; 10 KB: kretry 202,000,
    # Spring 57,300, blocking 66,000 (71,400 at 800,000), Parallel Consumer
    # 21,800 (26,600 at 270,000); at 22:38, load 2-5, the peers faster
    # still: 1 KB Spring 394,000, blocking 454,000, Parallel Consumer
    # 32,100; 10 KB 72,100 / 84,300 / 34,500 (windows 9.6-10.7 s): each
    # peer sized to a window of 13 s at those rates, kretry to 11 s or more
    # at its fastest; kretry's 1 KB input is 18 GB a run)
    o["size_n"] = {"kretry": {1024: 18000000, 10240: 2400000},
                   "spring": {1024: 5200000, 10240: 950000},
                   "spring_blocking": {1024: 6000000, 10240: 1100000},
                   "pc": {1024: 420000, 10240: 450000}}
    if o.get("size_override"):
        for side in o["size_n"]:
            o["size_n"][side] = {int(b): o["size_override"]
                                 for b in o["value_sizes"].split(",")}
    if "happy" in only:  # one row a failure percent
        i = only.index("happy")
        only = only[:i] + [f"happy{p}" for p in o["fail_pcts"].split(",")] + only[i + 1:]
    if "tier_mem" in only:  # one row a waiting count and partition count
        i = only.index("tier_mem")
        only = only[:i] + [f"tier_mem_{n}_p{p}" for p in o["mem_parts"].split(",")
                           for n in o["mem_n"].split(",")] + only[i + 1:]
    if "size" in only:  # one row a value size
        i = only.index("size")
        only = only[:i] + [f"size{b}" for b in o["value_sizes"].split(",")] + only[i + 1:]
    h = Harness(kbin, boot)
    res = {"bootstrap": boot, "runs": runs, "load_start": os.getloadavg()[0],
           "sizes": dict(o, spring_warmup=SPRING_WARMUP)}
    log("bench peers start: " + json.dumps(res))
    for sc in only:
        ROW_T0[0] = time.time()
        if sc in ("kill", "txn_kill"):  # txn_kill: each transactional mode
            import kill_peers
            try:
                res[sc] = kill_peers.run(h, runs, *(
                    [("kretry_txn", "spring_txn", "pc_txn")] if sc == "txn_kill" else []))
                log_row(sc, res[sc])
            except Exception as ex:
                log(f"  {sc} failed: {ex}")
            continue
        if sc == "order":  # per-key order during retries, dead-letter copies
            import order_peers
            sides = os.environ.get("KRETRY_PEERS_ORDER_SIDES")
            try:
                res["order"] = order_peers.run(
                    h, runs, sides.split(",") if sides else order_peers.SIDES)
                log_row("order", res["order"])
            except Exception as ex:
                log(f"  order failed: {ex}")
            continue
        if sc.startswith("tier_mem_"):  # tier_mem_N_pP: N waiting, P partitions
            n, parts = (int(x) for x in sc[len("tier_mem_"):].split("_p"))
            try:
                res[sc] = tier_mem(h, runs, n, parts, sc)
                log_row(sc, res[sc])
            except Exception as ex:
                log(f"  {sc} failed: {ex}")
            finally:
                h.drop_tier_fill()
            continue
        rows = {}
        for r in range(runs):
            sides = ["kretry", "spring", "spring_blocking"]
            if sc.startswith(("happy", "size")) or sc in (
                    "paced", "delay", "retry_hop", "dead_letter"):
                sides.append("pc")
            if sc == "parallel":
                sides = ["kretry", "pc", "spring"]
            if sc == "txn":
                sides = ["kretry", "spring_txn", "pc_txn"]
            if r % 2:
                sides.reverse()
            sides = chosen(sides)
            for side in sides:
                log(f"bench peers {sc} run {r + 1}/{runs}: {side}")
                measure_side(side, lambda: run_side(h, sc, side, o), rows, sc)
        out = {}
        for side, rs in rows.items():
            if sc == "parallel" and side in ("kretry", "pc"):
                out[side] = {o: {"secs": statistics.median(x[o]["secs"] for x in rs),
                                 "slept_us": statistics.median(x[o]["slept_us"] for x in rs)}
                             for o in rs[0] if o not in ("load", "settings")}
                out[side]["settings"] = rs[0].get("settings")
                continue
            keys = [k for k, v in rs[0].items() if isinstance(v, (int, float))
                    and not isinstance(v, bool)]
            out[side] = {k: med(rs, k) for k in keys}
            out[side]["runs"] = len(rs)
            out[side]["windows_short"] = sum(1 for x in rs if x.get("window_short"))
            out[side]["settings"] = rs[0].get("settings")
            out[side]["range"] = {k: [min(x[k] for x in rs), max(x[k] for x in rs)]
                                  for k in keys if all(k in x for x in rs)}
        res[sc] = out
        res.setdefault("per_run", {})[sc] = rows  # every run, for the ranges
        # each row's medians as soon as it is done: a pass cut short keeps
        # what it finished
        log_row(sc, out)
    res["load_end"] = os.getloadavg()[0]
    if fmt == "json":
        print(json.dumps(res))
    else:
        print_table(res)


def fmt_n(v, d=0):
    return "-" if v is None else f"{v:,.{d}f}"


def rng(v, key, d=0):
    r = v.get("range", {}).get(key)
    return "" if not r else f" ({fmt_n(r[0], d)}-{fmt_n(r[1], d)})"


def print_table(res):
    print(f"peers on {res['bootstrap']}, medians of {res['runs']} runs, "
          f"ranges in brackets (load {res['load_start']:.2f} at start, "
          f"{res['load_end']:.2f} at end)")
    d = res.get("delay")
    if d:
        print("\ndelay through a 1 s tier (lateness ms: p50 / p99 / max, "
              "early; input rate a second, window s)")
        for side, v in d.items():
            print(f"  {side:16s} {v.get('messages', 0):>7,.0f} msgs  "
                  f"{fmt_n(v.get('p50_ms'), 2)} / {fmt_n(v.get('p99_ms'), 2)}"
                  f"{rng(v, 'p99_ms', 2)} / {fmt_n(v.get('max_ms'), 2)}  early "
                  f"{fmt_n(v.get('early'))}  at {fmt_n(v.get('rate'))}/s, "
                  f"{fmt_n(v.get('secs'), 1)} s" +
                  (f"; behind the input's due time p50 / p99 "
                   f"{fmt_n(v['behind_input_p50_ms'])} / "
                   f"{fmt_n(v['behind_input_p99_ms'])} ms"
                   if v.get("behind_input_p50_ms") is not None else ""))
    p = res.get("paced")
    if p:
        print(f"\npaced: the happy path at {res['sizes']['paced_rate']:,} msgs/s "
              f"({res['sizes']['paced_n']:,} messages; window s, CPU s over it, "
              "CPU us a message, peak RSS KB)")
        for side, v in p.items():
            print(f"  {side:16s} {fmt_n(v.get('secs'), 1)}{rng(v, 'secs', 1)} s  "
                  f"CPU {fmt_n(v.get('cpu_s'), 2)}{rng(v, 'cpu_s', 2)} s  "
                  f"{fmt_n(v.get('cpu_us_per_msg'), 1)} us  "
                  f"{fmt_n(v.get('peak_rss_kb'))} KB")
    sized = sorted((k for k in res if k.startswith("size") and k[4:].isdigit()),
                   key=lambda k: int(k[4:]))
    for sc in ["retry_hop", "dead_letter"] + sorted(k for k in res if k.startswith("happy")) + \
            sized + ["txn"]:
        t = res.get(sc)
        if not t:
            continue
        print(f"\n{sc} (msgs/s, window s, CPU us a message, peak RSS KB)")
        for side, v in t.items():
            print(f"  {side:16s} {v.get('messages', 0):>9,.0f} msgs  "
                  f"{fmt_n(v.get('msgs_per_s')):>9}{rng(v, 'msgs_per_s')} msgs/s  "
                  f"{fmt_n(v.get('secs'), 1)}{rng(v, 'secs', 1)} s  "
                  f"{fmt_n(v.get('cpu_us_per_msg'), 1):>8}{rng(v, 'cpu_us_per_msg', 1)} us  "
                  f"{fmt_n(v.get('peak_rss_kb')):>9} KB" +
                  (f"  [{v['windows_short']} of {v['runs']} windows under "
                   f"{MIN_WINDOW_S:.0f} s]" if v.get("windows_short") else ""))
    p = res.get("parallel")
    if p:
        print("\nparallel shape (10,000 msgs, 1 partition, 1,000 keys, 0-5 ms, 16 threads): seconds")
        for side, v in p.items():
            if "secs" in v:
                print(f"  {side:13s} concurrency 16 on one partition: {v['secs']:.3f} s")
            else:
                print(f"  {side:13s} " + ", ".join(
                    f"{o} {x['secs']:.3f} s" for o, x in v.items()
                    if o != "settings"))
    mems = sorted((k for k in res if k.startswith("tier_mem_")),
                  key=lambda k: tuple(int(x) for x in k[9:].split("_p"))[::-1])
    if mems:
        print("\ntier_mem: memory with messages waiting in a 1 h retry (KB: RSS "
              "of the empty baseline and with the messages waiting (its peak, "
              "VmHWM), growth, "
              "bytes a waiting message; the JVMs also heap after a full GC and "
              "NMT's committed total, waiting / baseline; medians of the runs "
              "that held, outcome of the others)")
    for sc in mems:
        for side, v in res[sc].items():
            head = (f"  {side:15s} {v['messages']:>9,} waiting, "
                    f"{v['partitions']:>3} partitions: ")
            bad = [x for x in v.get("outcomes", []) if x != "held"]
            if not v.get("runs_held"):
                print(head + "did not hold: " + "; ".join(bad))
                continue
            cap = ""
            st = v.get("settings") or {}
            if side == "kretry":
                cap = f" (cap {st.get('tier_buffer_total_bytes', 0) >> 20} MiB)"
            else:
                cap = (f"; heap after GC {fmt_n(v.get('heap_after_gc_kb'))} / "
                       f"{fmt_n(v.get('heap_after_gc_empty_kb'))}, NMT "
                       f"{fmt_n(v.get('nmt_committed_kb'))} / "
                       f"{fmt_n(v.get('nmt_committed_empty_kb'))} "
                       f"(-Xmx{st.get('heap_max')})")
            print(head + f"empty {fmt_n(v.get('rss_empty_kb'))}, waiting "
                  f"{fmt_n(v.get('rss_waiting_kb'))}{rng(v, 'rss_waiting_kb')} "
                  f"(peak {fmt_n(v.get('hwm_waiting_kb'))}), "
                  f"growth {fmt_n(v.get('rss_growth_kb'))}, "
                  f"{fmt_n(v.get('bytes_per_waiting_msg'), 1)} B/msg{cap}; "
                  f"{v['runs_held']} of {v['runs']} runs held" +
                  (" (" + "; ".join(bad) + ")" if bad else ""))
    od = res.get("order")
    if od:
        print("\nper-key order during retries (keys of 20 handled out of produce "
              "order, messages late: median (range)); the dead-letter copy of n-11 "
              "(headers + value bytes, headers)")
        for side, v in od.items():
            d = v.get("dlq_copy") or {}
            print(f"  {side:16s} keys {fmt_n(v['keys_out_of_order'])} "
                  f"({v['keys_out_of_order_range'][0]}-{v['keys_out_of_order_range'][1]}), "
                  f"late {fmt_n(v['messages_late'])} "
                  f"({v['messages_late_range'][0]}-{v['messages_late_range'][1]}); "
                  + (f"DLQ copy {d.get('headers_and_value_bytes')} bytes, "
                     f"{d.get('headers')} headers, largest "
                     # a tuple in the run, a list once read back from a log
                     f"{list(d.get('largest_header') or [])}"
                     if d else "no DLQ"))
    for sc in ("kill", "txn_kill"):
        k = res.get(sc)
        if not k:
            continue
        print(f"\n{sc}: repeats per SIGKILL (handlings beyond one a message, per "
              "kill); dead-letter values copied twice, read_committed, a run")
        for side, v in k.items():
            lo, hi = v.get("per_kill_range", [None, None])
            print(f"  {side:16s} {fmt_n(v.get('repeats_per_kill'), 1)} "
                  f"({fmt_n(lo, 1)}-{fmt_n(hi, 1)}) "
                  f"(runs: {v.get('per_run')}); unhandled by the last worker, "
                  f"handled after a restart: {v.get('stalled', 0)}, lost: "
                  f"{v.get('lost', 0)}; DLQ values twice "
                  f"{v.get('dlq_values_twice')}")
            for u in v.get("unhandled", []):
                print(f"    run {u['run']}: partition [first, last, count] of "
                      f"offsets {u['offsets']}; committed {u['committed']}; "
                      f"handler calls {u['calls']}")

    short = [f"{sc} {side} ({v['windows_short']} of {v['runs']})"
             for sc, row in res.items() if isinstance(row, dict)
             for side, v in row.items()
             if isinstance(v, dict) and v.get("windows_short")]
    if short:
        print(f"\nWARNING: measured windows under {MIN_WINDOW_S:.0f} s (raise "
              "these sides' messages): " + ", ".join(short))

if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main()
