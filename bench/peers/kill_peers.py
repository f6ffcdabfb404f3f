"""Repeats per SIGKILL of the consumer process, kretry against Spring Kafka and
Parallel Consumer: tests/it_kill.c's shape from outside (bench/README.md
"peers"). N messages "n-i" on 3 partitions; every side runs it_worker's
handler (2 ms a call; i % 7 fails once; i % 11 fails for good) at one handler
thread and appends "<pid> <i>" to a log on each OK. A worker is started,
SIGKILLed once it has logged a random number of lines (somewhere in the first
half of what is left, then 0-40 ms more), three times; a last worker runs
until every message that should end OK did (or logs nothing new for IDLE
seconds). Repeats: OK lines, after kill k, of messages already logged before
it (work the kill made the group redo).

What the last worker left unhandled is accounted for: each such message's
partition and offset (from the producer's acknowledgements), the group's
committed offsets (with Parallel Consumer's offset metadata decoded: the
incomplete offsets it resumes from; for Parallel Consumer also after each
kill), and which calls each worker's handler had of it (Parallel Consumer's
calls log). Then the worker is stopped and one
more is started on the same group: "stalled" counts the messages that
restart handled (the consumer had them but did not hand them out), "lost"
the ones that are still unhandled after it (committed past, never handled).

Each side's worker and its configuration: kill_shape.py. Where the side
has a dead-letter topic, its copies are counted by value at the end of a
run (kretry.peers.Copies: read_committed, and read_uncommitted beside it):
copies of one message beyond the first.
"""
import json
import os
import random
import signal
import statistics
import subprocess
import time

N = 2000
KILLS = 3
EXPECTED = {i for i in range(N) if i % 11}
IDLE = 30  # seconds without a new OK line: the last worker has stalled
DEADLINE = 180  # seconds for the last worker, whatever it logs


def read(out):
    try:
        with open(out) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def seen_ids(lines):
    return {int(l.split()[1]) for l in lines if len(l.split()) == 2}


def await_lines(out, pid, target, timeout=90):
    deadline = time.time() + timeout
    while time.time() < deadline:
        mine = sum(1 for l in read(out) if l.startswith(f"{pid} "))
        if mine >= target:
            return True
        time.sleep(0.01)
    return False


def await_all(out, idle=IDLE, deadline=DEADLINE):
    """Until every expected message is logged OK, the log has not grown for
    idle seconds, or deadline; returns the expected messages not logged."""
    t0 = last = time.time()
    size = -1
    while time.time() < t0 + deadline:
        lines = read(out)
        missing = EXPECTED - seen_ids(lines)
        if not missing:
            return missing
        if len(lines) != size:
            size, last = len(lines), time.time()
        elif time.time() > last + idle:
            return missing
        time.sleep(0.05)  # another process's appends: nothing to wait on
    return EXPECTED - seen_ids(read(out))


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def committed(h, group):
    """The group's committed offsets (PcOffsets: Parallel Consumer's
    incomplete offsets decoded from the metadata)."""
    from run_peers import cp
    r = subprocess.run(["java", "-cp", cp("pc"), "kretry.peers.pc.PcOffsets",
                        h.boot, group], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]


def unhandled(h, missing, coords, group, calls, pids):
    """Where the messages the last worker left unhandled sit, what the group
    committed, and which calls each worker's handler had of them (workers
    numbered from 0 in start order; Parallel Consumer's calls log)."""
    by_part = {}
    for i in sorted(missing):
        part, off = coords.get(i, (-1, -1))
        by_part.setdefault(part, []).append(off)
    seen = {}
    for line in read(calls):
        f = line.split()
        if len(f) == 5 and int(f[1]) in missing and int(f[0]) in pids:
            w = f"worker {pids.index(int(f[0]))} {f[4]}"
            seen[w] = seen.get(w, 0) + 1
    return {"messages": sorted(missing)[:60],
            "offsets": {str(p): [min(o), max(o), len(o)] for p, o in by_part.items()},
            "committed": committed(h, group), "calls": seen}


def one_run(h, side, seed):
    import kill_shape
    rng = random.Random(seed)
    t = h.name("kill-" + side)
    names = kill_shape.topics(side, t)
    h.topics("create", 3, names)
    out = f"/tmp/{t}.out"
    try:
        h.produce(t, N, values="kill", map=out + ".map")
        coords = {int(f[0]): (int(f[1]), int(f[2])) for f in
                  (l.split() for l in read(out + ".map")) if len(f) == 3}
        cmd = kill_shape.command(h, side, t, out, N)
        kill_at, pids, after_kill = [], [], []
        for k in range(KILLS):
            missing = len(EXPECTED - seen_ids(read(out)))
            if not missing:
                break
            target = 1 + rng.randrange(missing // 2 + 1)
            extra = rng.randrange(40) / 1000
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            pids.append(p.pid)
            if await_lines(out, p.pid, target):
                time.sleep(extra)
            p.send_signal(signal.SIGKILL)
            p.wait()
            kill_at.append(len(read(out)))
            if side.startswith("pc"):  # what the next worker resumes from
                after_kill.append(committed(h, t + "-g"))
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        pids.append(p.pid)
        missing = await_all(out)
        stop(p)
        lines = read(out)  # the repeats are counted up to here
        res = {}
        if missing:
            res["unhandled"] = unhandled(h, missing, coords, t + "-g",
                                         out + ".calls", pids)
            res["unhandled"]["committed_after_kills"] = after_kill
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            still = await_all(out)
            stop(p)
            res["stalled"] = len(missing - still)
            missing = still
        lost = len(missing)
        if kill_shape.dlq(side, t):  # the dead-letter copies, each counted
            res["dlq_copies"] = kill_shape.copies(h, kill_shape.dlq(side, t))
        before, repeats, k = set(), [0] * len(kill_at), -1
        for n, line in enumerate(lines):
            while k + 1 < len(kill_at) and n >= kill_at[k + 1]:
                k += 1
            i = int(line.split()[1])
            if i in before and k >= 0:
                repeats[k] += 1
            before.add(i)
        return dict({"kills": len(kill_at), "repeats": repeats, "lost": lost,
                     "per_kill": sum(repeats) / max(1, len(kill_at))}, **res)
    finally:
        h.topics("delete", 0, names)
        for f in (out, out + ".map", out + ".calls"):
            try:
                os.unlink(f)
            except FileNotFoundError:
                pass


def run(h, runs, sides=("kretry", "spring", "spring_blocking", "pc",
                        "pc_defaults")):
    from run_peers import settings
    res = {}
    sides = list(sides)
    for r in range(runs):
        for side in (sides if r % 2 == 0 else sides[::-1]):
            load0 = os.getloadavg()[0]
            v = one_run(h, side, 1000 + r)  # the same kill points per run
            v["load"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
            v["settings"] = settings(side, "kill")
            print(f"bench peers kill run {r + 1}/{runs}: {side} {v}",
                  file=__import__("sys").stderr, flush=True)
            res.setdefault(side, []).append(v)
    return {s: {"repeats_per_kill": statistics.median(x["per_kill"] for x in v),
                "lost": sum(x["lost"] for x in v),
                "stalled": sum(x.get("stalled", 0) for x in v),
                "per_run": [x["repeats"] for x in v],
                "per_kill_range": [min(x["per_kill"] for x in v), max(x["per_kill"] for x in v)],
                "loads": [x["load"] for x in v], "settings": v[0]["settings"],
                # dead-letter copies of one message beyond the first, as a
                # read_committed consumer sees them, a run
                "dlq_values_twice": [x.get("dlq_copies", {}).get(
                    "committed_values_twice") for x in v],
                "dlq_records_beyond_one": [x.get("dlq_copies", {}).get(
                    "committed_records_beyond_one") for x in v],
                "unhandled": [dict(x["unhandled"], run=n + 1, stalled=x["stalled"],
                                   lost=x["lost"])
                              for n, x in enumerate(v) if "unhandled" in x]}
            for s, v in res.items()}
