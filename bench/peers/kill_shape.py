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
30 ms retry delay, "pc_defaults" at its own (5 s, 1 s). Every peer JVM at
run_peers.HEAP.
"""
import os


def dlq(side, t):
    """The side's dead-letter topic for source @t (None: it has none)."""
    if side.startswith("kretry"):
        return t + ".dlq"
    if side.startswith("spring"):
        return t + "-dlt"
    return None


def topics(side, t):
    """Every topic the side's worker reads or writes, the source first."""
    retry = {"kretry": [t + ".retry.1"], "kretry_key": [t + ".retry.1"],
             "spring": [t + "-retry"]}.get(side, [])
    return [t] + retry + ([dlq(side, t)] if dlq(side, t) else [])


def command(h, side, t, out, messages):
    """The side's worker on source @t, group t-g, its OK lines appended to
    @out (and, for Parallel Consumer, every call to out.calls)."""
    from run_peers import JVM, cp
    if side.startswith("kretry"):
        worker = os.path.join(os.path.dirname(h.kbin), "peers_kill_worker")
        cmd = [worker, h.boot, t, t + "-g", out]
        return cmd + (["plain", "ordering=key"] if side == "kretry_key" else [])
    props = dict(bootstrap=h.boot, topic=t, group=t + "-g", out=out,
                 messages=messages, delay_ms=30, concurrency=1, ordering="KEY")
    if side.startswith("spring"):
        props["concurrency"] = 3  # one consumer a partition
    if side == "spring_blocking":  # DefaultErrorHandler, 30 ms back-off
        props["mode"] = "blocking"
    if side == "pc":
        props.update(commit_interval_ms=100, retry_delay_ms=30)
    main, module = ("kretry.peers.spring.SpringKill", "spring") \
        if side.startswith("spring") else ("kretry.peers.pc.PcKill", "pc")
    return ["java"] + JVM + ["-cp", cp(module)] + \
        [f"-Dbench.{k}={v}" for k, v in props.items()] + [main]
