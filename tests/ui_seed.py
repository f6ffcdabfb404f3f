"""What the kretry ui tests share: a dev-broker with a topology whose DLQ
is seeded with known messages (kafka-python, an independent client), a
`kretry ui` process, and HTTP requests that return the status instead of
raising.
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blackbox_dev_broker import SKIP, Broker  # noqa: E402,F401

TOPOLOGY = """\
kafka:
  socket.nagle.disable: "true"
topologies:
  - name: orders
    source: orders
    group: orders-service
    retry:
      tiers: [1s, 10s]
    topics:
      partitions: 2
    alerts: { dlq_messages: 1, oldest_age: 1h, dlq_rate: 20 }
"""


def check(cond, what):
    """Fails the test with @what; quiet when it holds (the messages carry
    whole response bodies)."""
    if not cond:
        raise AssertionError(what)


CLASSES = ["permanent", "exhausted", "schema"]
SEEDED = 12


def seeded():
    """The seeded DLQ messages in the order the DLQ is read: partition 0,
    then partition 1, each by offset."""
    now = int(time.time() * 1000)
    msgs = []
    for i in range(SEEDED):
        msgs.append({
            "i": i,
            "partition": i % 2,
            "key": b"\x00\xffbin" if i == 5 else b"k%d" % i,
            "value": b"value-%d" % i,
            "class": CLASSES[i % 3],
            "code": "HTTP_503" if i % 4 == 1 else "VALIDATION",
            "error": "failure %d" % i,
            # four dead-lettered two hours ago, the rest a minute ago
            "ts": now - (7200000 if i < 4 else 60000),
            "first": now - 7300000,
        })
    for p in (0, 1):
        for off, m in enumerate(x for x in msgs if x["partition"] == p):
            m["offset"] = off
    return sorted(msgs, key=lambda m: (m["partition"], m["offset"]))


def seed(bootstrap):
    from kafka import KafkaProducer
    prod = KafkaProducer(bootstrap_servers=bootstrap)
    msgs = seeded()
    for m in msgs:
        h = [("kretry-error-class", m["class"].encode()),
             ("kretry-error-code", m["code"].encode()),
             ("kretry-error", m["error"].encode()),
             ("kretry-attempt", b"3"),
             ("kretry-first-failure-ts", str(m["first"]).encode()),
             ("kretry-last-failure-ts", str(m["ts"]).encode()),
             ("kretry-original-topic", b"orders"),
             ("kretry-original-partition", str(m["partition"]).encode()),
             ("kretry-original-offset", str(100 + m["i"]).encode()),
             ("kretry-group", b"orders-service"),
             ("trace", b"t%d" % m["i"])]
        prod.send("orders.dlq", key=m["key"], value=m["value"], headers=h,
                  partition=m["partition"], timestamp_ms=m["ts"]).get(10)
    prod.flush()
    prod.close()
    return msgs


def topology_file(d):
    path = os.path.join(d, "orders.yaml")
    with open(path, "w") as f:
        f.write(TOPOLOGY)
    return path


class UI(Broker):
    """`kretry ui` as a child process: its first stdout line is the URL."""

    def __init__(self, cli, args, env=None):
        super().__init__(cli, args, "ui", env)
        self.url = self.bootstrap

    def stop(self):
        return super().stop(timeout=30)


def http(url, method="GET", body=None, headers=None, timeout=60):
    """(status, headers, body bytes); never raises for an HTTP status."""
    data = body if isinstance(body, (bytes, type(None))) else \
        json.dumps(body).encode()
    h = dict(headers or {})
    if data is not None and "Content-Type" not in h:
        h["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def get_json(url, want=200, **kw):
    status, _, body = http(url, **kw)
    check(status == want, "%s: status %d, expected %d: %s"
          % (url, status, want, body[:300]))
    return json.loads(body)
