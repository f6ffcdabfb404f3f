"""Per-key order during retries and the size of a dead-letter copy, kretry
beside Spring Kafka and Parallel Consumer (bench/README.md "peers"; run by
run_peers.py --only order).

The kill shape without kills: N messages "n-i" on 3 partitions, now keyed
"k-NN" by i mod KEYS (20 keys, 100 messages a key, each key on one
partition: a key's next message comes about 7 calls later on its partition,
sooner than a 30 ms retry), every
side's worker of the kill row (2 ms a call, i % 7 fails once and is retried
after 30 ms, i % 11 fails for good) run once until every message that should
end OK did. From the OK lines, in the order they were appended: a key is
out of order when its messages were handled OK in another order than they
were produced (i rising); a message is late when a later message of its
key was handled OK before it. Dead-lettered messages (i % 11) are not in the
OK lines; order is among the messages handled OK.

Sides: kretry at its defaults (ordering=none) and with ordering=key, the
kill row's peers_kill_worker; Spring's two configurations (SpringKill, the
kill row's: concurrency 3, a 30 ms retry topic or a 30 ms blocking
back-off); Parallel Consumer (PcKill, ordering KEY, commitInterval 100 ms,
retry delay 30 ms).

The dead-letter copy: the copy of n-11 (the first message that fails for
good, on its first attempt, on every side) read back from the side's
dead-letter topic: its key, value and header bytes (names and values), the
header names. Parallel Consumer 0.5.3.3 has no dead-letter topic.
"""
import os
import statistics
import subprocess
import sys

N = 2000
KEYS = 20
EXPECTED = {i for i in range(N) if i % 11}
SIDES = ("kretry", "kretry_key", "spring", "spring_blocking", "pc")
PROMISE = {
    "kretry": "ordering=none (its default): no order promised once a "
              "message is retried",
    "kretry_key": "ordering=key: a key's later messages wait while one of "
                  "its messages waits in a tier",
    "spring": "non-blocking retries: the retried record leaves the "
              "partition for the retry topic; no order promised",
    "spring_blocking": "blocking retries: the partition waits out the "
                       "back-off; partition order kept",
    "pc": "ordering KEY: one record of a key in flight at a time; a failed "
          "record is retried in place",
}


def produce(boot, topic):
    from kafka import KafkaProducer  # kafka-python (Debian's python3-kafka)
    p = KafkaProducer(bootstrap_servers=boot, acks="all", linger_ms=5)
    for i in range(N):
        p.send(topic, key=b"k-%02d" % (i % KEYS), value=b"n-%d" % i)
    p.flush()
    p.close()


def dlq_copy(boot, topic, want=b"n-11"):
    """The dead-letter copy of @want in @topic: its sizes and header names."""
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=boot, enable_auto_commit=False,
                      consumer_timeout_ms=5000)
    try:
        parts = c.partitions_for_topic(topic) or set()
        c.assign([TopicPartition(topic, p) for p in parts])
        c.seek_to_beginning()
        for r in c:
            if r.value == want:
                hb = sum(len(k.encode()) + len(v or b"") for k, v in r.headers)
                return {"topic": topic, "key_bytes": len(r.key or b""),
                        "value_bytes": len(r.value or b""),
                        "headers": len(r.headers), "header_bytes": hb,
                        "headers_and_value_bytes": hb + len(r.value or b""),
                        "header_names": [k for k, _ in r.headers],
                        "largest_header": max(((k, len(v or b""))
                                               for k, v in r.headers),
                                              key=lambda x: x[1], default=None)}
        return {"topic": topic, "error": f"no copy of {want.decode()}"}
    finally:
        c.close()


def order_of(lines):
    """Keys handled out of produce order and messages handled late."""
    seen, by_key = set(), {}
    for line in lines:
        i = int(line.split()[1])
        if i in seen:
            continue
        seen.add(i)
        by_key.setdefault(i % KEYS, []).append(i)
    bad_keys = late = 0
    for seq in by_key.values():
        top, bad = -1, False
        for i in seq:
            if i < top:
                late += 1
                bad = True
            top = max(top, i)
        bad_keys += bad
    return {"keys": len(by_key), "keys_out_of_order": bad_keys,
            "messages_late": late, "handled": len(seen)}


def one_run(h, side):
    import kill_shape
    from kill_peers import await_all, read, stop
    t = h.name("order-" + side)
    dlq = kill_shape.dlq(side, t)
    names = kill_shape.topics(side, t)
    h.topics("create", 3, names)
    out = f"/tmp/{t}.out"
    try:
        produce(h.boot, t)
        cmd = kill_shape.command(h, side, t, out, N)
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        missing = await_all(out)
        stop(p)
        v = order_of(read(out))
        v["unhandled"] = len(missing)
        v["promise"] = PROMISE[side]
        if dlq:
            v["dlq_copy"] = dlq_copy(h.boot, dlq)
        return v
    finally:
        h.topics("delete", 0, names)
        try:
            os.unlink(out)
        except FileNotFoundError:
            pass


def run(h, runs, sides=SIDES):
    from run_peers import settings
    res = {}
    sides = list(sides)
    for r in range(runs):
        for side in (sides if r % 2 == 0 else sides[::-1]):
            load0 = os.getloadavg()[0]
            try:
                v = one_run(h, side)
            except Exception as ex:
                print(f"  order {side} failed: {ex}", file=sys.stderr, flush=True)
                continue
            v["load"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
            v["settings"] = dict(settings("kretry" if side == "kretry_key" else side,
                                          "kill"), keys=KEYS, messages=N)
            if side == "kretry_key":
                v["settings"]["ordering"] = "key"
            print(f"bench peers order run {r + 1}/{runs}: {side} {v}",
                  file=sys.stderr, flush=True)
            res.setdefault(side, []).append(v)
    out = {}
    for s, v in res.items():
        ko = [x["keys_out_of_order"] for x in v]
        ml = [x["messages_late"] for x in v]
        out[s] = {"keys_out_of_order": statistics.median(ko),
                  "keys_out_of_order_range": [min(ko), max(ko)],
                  "messages_late": statistics.median(ml),
                  "messages_late_range": [min(ml), max(ml)],
                  "keys": v[0]["keys"], "unhandled": sum(x["unhandled"] for x in v),
                  "promise": PROMISE[s], "dlq_copy": v[0].get("dlq_copy"),
                  "dlq_copy_bytes_range": [
                      min(x["dlq_copy"].get("headers_and_value_bytes", 0) for x in v),
                      max(x["dlq_copy"].get("headers_and_value_bytes", 0) for x in v)]
                  if v[0].get("dlq_copy") else None,
                  "loads": [x["load"] for x in v], "settings": v[0]["settings"],
                  "per_run": v}
    return out
