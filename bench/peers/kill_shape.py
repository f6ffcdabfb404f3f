"""The workers of the kill shape, one command a side: what kill_peers.py
(repeats per SIGKILL) and order_peers.py (per-key order during retries)
both start on N messages "n-i" on 3 partitions, each side in the
configuration of its kill row (bench/README.md "peers").

kretry: build-bench/bench/peers_kill_worker (tests/it_worker.c: kretry's
defaults, commits every 100 ms, retry.tiers=30ms); "kretry_key" the same
with ordering=key. Spring: SpringKill at concurrency 3 (one consumer a
partition), a 30 ms retry topic and a DLT ("spring") or a 30 ms blocking
back-off and the DLT ("spring_blocking"). Parallel Consumer: PcKill at
maxConcurrency 1, ordering KEY; "pc" with commitInterval 100 ms and a
30 ms retry delay, "pc_defaults" at its own (5 s, 1 s). Each side's
transactional mode ("_txn"): kretry with routing=transactional; Spring's
blocking retries in its Kafka transactions (SpringKill -Dbench.txn=true:
a KafkaTransactionManager and a DefaultAfterRollbackProcessor with the
recoverer, commitRecovered); Parallel Consumer at "pc"'s settings with
PERIODIC_TRANSACTIONAL_PRODUCER, its handler writing i % 11 to SOURCE-dlt
(pollAndProduceMany) where "pc" skips it. Every peer JVM at
run_peers.HEAP.
"""
import os


def dlq(side, t):
    """The side's dead-letter topic for source @t (None: it has none)."""
    if side.startswith("kretry"):
        return t + ".dlq"
    if side.startswith("spring") or side == "pc_txn":
        return t + "-dlt"
    return None


def topics(side, t):
    """Every topic the side's worker reads or writes, the source first."""
    retry = [t + ".retry.1"] if side.startswith("kretry") else \
        [t + "-retry"] if side == "spring" else []
    return [t] + retry + ([dlq(side, t)] if dlq(side, t) else [])


def command(h, side, t, out, messages):
    """The side's worker on source @t, group t-g, its OK lines appended to
    @out (and, for Parallel Consumer, every call to out.calls)."""
    from run_peers import JVM, cp
    if side.startswith("kretry"):
        worker = os.path.join(os.path.dirname(h.kbin), "peers_kill_worker")
        cmd = [worker, h.boot, t, t + "-g", out]
        return cmd + {"kretry_key": ["plain", "ordering=key"],
                      "kretry_txn": ["plain", "routing=transactional"]}.get(side, [])
    props = dict(bootstrap=h.boot, topic=t, group=t + "-g", out=out,
                 messages=messages, delay_ms=30, concurrency=1, ordering="KEY")
    if side.startswith("spring"):
        props["concurrency"] = 3  # one consumer a partition
    if side in ("spring_blocking", "spring_txn"):  # 30 ms back-off in place
        props["mode"] = "blocking"
    if side == "spring_txn":
        props["txn"] = "true"
    if side in ("pc", "pc_txn"):
        props.update(commit_interval_ms=100, retry_delay_ms=30)
    if side == "pc_txn":
        props["commit_mode"] = "transactional"
    main, module = ("kretry.peers.spring.SpringKill", "spring") \
        if side.startswith("spring") else ("kretry.peers.pc.PcKill", "pc")
    return ["java"] + JVM + ["-cp", cp(module)] + \
        [f"-Dbench.{k}={v}" for k, v in props.items()] + [main]


def copies(h, topic):
    """The copies in @topic by value (kretry.peers.Copies): read_committed
    and read_uncommitted, once no transaction is left open."""
    import json
    import subprocess
    from run_peers import cp
    r = subprocess.run(["java", "-cp", cp("pc"), f"-Dbench.bootstrap={h.boot}",
                        f"-Dbench.topic={topic}", "kretry.peers.Copies"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True, timeout=300)
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    return {"topic": topic, "error": f"Copies exited {r.returncode}"}
