"""What the kretry ui tests share: a dev-broker (or the real cluster in
KRETRY_TEST_BOOTSTRAP, bbkafka.py) with a topology whose DLQ is seeded with
known messages (kafka-python, an independent client), a `kretry ui`
process, and HTTP requests that return the status instead of raising.
"""
import json
import os
import select
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import (SKIP, Broker, Cluster, chain,  # noqa: E402,F401
                     dev_broker_args, kafka_kwargs, service_yaml)

TOPOLOGY = """\
kafka:
  socket.nagle.disable: "true"
topologies:
  - name: orders
    source: %s
    group: %s
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


def start_cluster(cli, d, extra=None):
    """The cluster of a ui test (bbkafka.Cluster) with the topology's
    chain (and @extra topics) and the topology file written in @d for it:
    (cluster, path). dev-broker creates the chain from the file and @extra
    from --topic: librdkafka 2.0.2's mock cluster created any topic a
    Metadata request named, a newer one (Metadata v4 and later) only when
    the client asks for it, and kretry's clients do not."""
    k = Cluster(dict(chain("orders", 2, 2), **(extra or {})))
    path = topology_file(d, k)
    more = dev_broker_args({k.name(t): p for t, p in (extra or {}).items()})
    return k.start(cli, ["--topology", path] + more), path


def seed(k):
    from kafka import KafkaProducer
    prod = KafkaProducer(bootstrap_servers=k.bootstrap, **kafka_kwargs())
    msgs = seeded()
    for m in msgs:
        h = [("kretry-error-class", m["class"].encode()),
             ("kretry-error-code", m["code"].encode()),
             ("kretry-error", m["error"].encode()),
             ("kretry-attempt", b"3"),
             ("kretry-first-failure-ts", str(m["first"]).encode()),
             ("kretry-last-failure-ts", str(m["ts"]).encode()),
             ("kretry-original-topic", k.name("orders").encode()),
             ("kretry-original-partition", str(m["partition"]).encode()),
             ("kretry-original-offset", str(100 + m["i"]).encode()),
             ("kretry-group", k.group("orders-service").encode()),
             ("trace", b"t%d" % m["i"])]
        prod.send(k.name("orders.dlq"), key=m["key"], value=m["value"],
                  headers=h, partition=m["partition"],
                  timestamp_ms=m["ts"]).get(10)
    prod.flush()
    prod.close()
    return msgs


def source_messages(k, want, timeout=15):
    """The source's messages, read to its end offsets (the high watermarks
    the cluster answers, asked again until @want are there or @timeout
    passed): "nothing" means the cluster said the partitions end where
    the read stopped, not that a consumer that had not connected yet saw
    nothing in one poll."""
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=k.bootstrap, enable_auto_commit=False,
                      **kafka_kwargs(),
                      auto_offset_reset="earliest", group_id=None)
    src = k.name("orders")
    tps = [TopicPartition(src, 0), TopicPartition(src, 1)]
    c.assign(tps)
    got, deadline = [], time.monotonic() + timeout
    try:
        while True:
            ends = c.end_offsets(tps)
            while any(c.position(tp) < ends[tp] for tp in tps):
                if time.monotonic() > deadline:
                    raise AssertionError(
                        "%s: not read to its end offsets %s within %ds"
                        % (src, {tp.partition: ends[tp] for tp in tps},
                           timeout))
                for recs in c.poll(timeout_ms=200).values():
                    got += recs
            if len(got) >= want or time.monotonic() > deadline:
                return got
            time.sleep(0.1)  # more are on their way: ask for the ends again
    finally:
        c.close()


def topology_file(d, k):
    path = os.path.join(d, "orders.yaml")
    with open(path, "w") as f:
        f.write(TOPOLOGY.replace("kafka:\n", "kafka:\n" + service_yaml(), 1)
                % (k.name("orders"), k.group("orders-service")))
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


class Chrome:
    """Headless Chromium driven through the DevTools protocol over a pipe
    (--remote-debugging-pipe: commands on its fd 3, answers on its fd 4,
    each a JSON text ended by NUL): the page is clicked as an operator
    would, and its state read back."""

    def __init__(self, binary, profile):
        import subprocess
        to_r, self._to_w = os.pipe()
        self._from_r, from_w = os.pipe()

        # fds 3 and 4 in the child; Python's own descriptors are not
        # inheritable (PEP 446), so close_fds=False passes only these two
        def fds():
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", "--no-first-run",
             "--remote-debugging-pipe", "--user-data-dir=" + profile,
             "about:blank"], preexec_fn=fds, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self._buf, self._id, self.session = b"", 0, None
        targets = self.call("Target.getTargets")["targetInfos"]
        page = [t for t in targets if t["type"] == "page"][0]
        self.session = self.call("Target.attachToTarget",
                                 targetId=page["targetId"],
                                 flatten=True)["sessionId"]

    def call(self, method, timeout=30, **params):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if self.session:
            msg["sessionId"] = self.session
        os.write(self._to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._id:
                    if "error" in reply:
                        raise AssertionError("%s: %s" % (method,
                                                         reply["error"]))
                    return reply["result"]
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_r], [], [], left)[0]:
                raise AssertionError("chromium did not answer %s" % method)
            chunk = os.read(self._from_r, 65536)
            if not chunk:
                raise AssertionError("chromium exited")
            self._buf += chunk

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise AssertionError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait(self, expr, timeout=30):
        """Polls @expr in the page until it is true; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            # not there yet (the page still loading) is false, not an error
            v = self.js("(() => { try { return (%s); } catch (e) { return "
                        "false; } })()" % expr)
            if v:
                return v
            if time.monotonic() > deadline:
                raise AssertionError("the page never got to: " + expr)
            time.sleep(0.05)

    def close(self):
        self.session = None  # Browser.close is the browser's, not the page's
        try:
            self.call("Browser.close", timeout=5)
        except AssertionError:
            pass
        try:
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self._to_w)
        os.close(self._from_r)
