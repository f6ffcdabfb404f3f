#!/usr/bin/python3
"""Black-box tests of `kretry run --http URL` on `kretry dev-broker` (or the
real cluster in KRETRY_TEST_BOOTSTRAP, bbkafka.py), against
a real HTTP server started here (http.server.ThreadingHTTPServer, HTTP/1.1
keep-alive). kcat produces the input and reads the dead-letter topic back.

usage: blackbox_http.py PATH/TO/kretry MODE
  routes       every answer class routes as specified (2xx, retried and
               failed statuses, Kretry-Error-Code, Retry-After in seconds
               and as an HTTP-date, a redirect, a timeout, moved statuses);
               the body arrives byte for byte, the metadata headers right,
               binary keys in base64, user headers only when valid
  concurrency  --concurrency 4 with ordering=key: 4 requests at once and
               never more, one per key, in each key's order, over reused
               connections
  ahead        --concurrency 2 with the endpoint holding every answer:
               2 requests open and 2 more messages handed to the handler,
               their requests built and waiting for a slot, never more
  down         the endpoint is down, then back: the breaker opens instead
               of burning attempts, and nothing is lost
  topology     --topology FILE whose handler.http names the endpoint (no
               --exec, no --http): URL, headers, content type, timeout and
               moved statuses come from the file
  avro         --http-body json with value.format avro at --concurrency 4:
               each decoded record arrives as JSON in its own request
               (python3-avro encodes the input)
  tls          https with --http-ca, --http-cert and --http-key against a
               server that requires a client certificate (openssl makes the
               certificates); without the CA the answer is a TLS retry
  framing      a header that frames or routes the request (Content-Length,
               Transfer-Encoding, Host, ..., Proxy-*), however spelled, in
               --http-header or in the topology's handler.http.headers:
               exit 64 at the start, nothing sent
Exit 0 on success, 1 on failure, 77 (skipped) when kcat is missing.
"""
import base64
import email.utils
import http.server
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import (KCAT_X, SKIP, Cluster, chain, check,  # noqa: E402
                     file_text, kcat, service_x)
from blackbox_run import MOCK_X  # noqa: E402

BINARY = bytes(range(256)) + b"\r\n\x00end"


class Server(http.server.ThreadingHTTPServer):
    """Records every request; answers by the behaviour function given."""
    daemon_threads = True

    def __init__(self, behave, port=0, tls=None):
        super().__init__(("127.0.0.1", port), Handler)
        if tls:
            self.socket = tls.wrap_socket(self.socket, server_side=True)
        self.scheme = "https" if tls else "http"
        self.behave = behave
        self.lock = threading.Lock()
        self.requests = []  # (headers dict lower-case, body, port)
        self.open_now = 0
        self.open_max = 0
        self.open_keys = {}
        self.key_overlap = []
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    def handle_error(self, request, client_address):
        # kretry hung up first (a timeout the test asked for): not an error
        if not isinstance(sys.exc_info()[1],
                          (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)

    @property
    def url(self):
        return "%s://127.0.0.1:%d/events" % (self.scheme,
                                             self.server_address[1])

    def stop(self):
        self.shutdown()
        self.server_close()

    def by_key(self, key):
        with self.lock:
            return [r for r in self.requests if r[0].get("kretry-key") == key]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        s = self.server
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        hdrs = {k.lower(): v for k, v in self.headers.items()}
        key = hdrs.get("kretry-key")
        with s.lock:
            s.requests.append((hdrs, body, self.client_address[1]))
            s.open_now += 1
            s.open_max = max(s.open_max, s.open_now)
            if key is not None:
                if s.open_keys.get(key):
                    s.key_overlap.append(key)
                s.open_keys[key] = s.open_keys.get(key, 0) + 1
        try:
            status, headers, text = s.behave(hdrs, body)
        finally:
            with s.lock:
                s.open_now -= 1
                if key is not None:
                    s.open_keys[key] -= 1
        data = text.encode()
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Run:
    """kretry run --http against the cluster @k; stderr kept in a file."""

    def __init__(self, cli, k, group, args, env=None, base=None):
        self.err = tempfile.TemporaryFile()
        if base is None:
            base = ["--source", k.name("orders"), "--group", k.group(group),
                    "--jitter", "0"]
        self.proc = subprocess.Popen(
            [cli, "run", "--bootstrap", k.bootstrap, "--verbose"] + base +
            MOCK_X + service_x() + args,
            env=dict(os.environ, **(env or {})), stderr=self.err)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=40)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stderr_text(self):
        return file_text(self.err)


def wait_until(cond, timeout, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()


def read_dlq(k, want, timeout):
    """The DLQ's copies by key as {key: headers text}, once @want are there
    (or at the timeout)."""
    dlq = {}

    def enough():
        out = kcat(k.bootstrap, ["-C", "-t", k.name("orders.dlq"), "-o",
                                 "beginning", "-e", "-f", "%k|%h\\n"])
        dlq.clear()
        dlq.update(l.split("|", 1) for l in out.splitlines() if "|" in l)
        return len(dlq) >= want
    wait_until(enough, timeout, 0.2)
    return dlq


def produce_lines(k, lines, partition=0):
    kcat(k.bootstrap, ["-P", "-t", k.name("orders"), "-p", str(partition),
                       "-K", ":"],
         stdin="".join("%s:%s\n" % kv for kv in lines).encode())


def produce_file(k, key, value, headers=()):
    """One message whose value is a file's bytes (binary-safe), with
    @key given as bytes."""
    with tempfile.NamedTemporaryFile() as f:
        f.write(value)
        f.flush()
        args = [b"kcat", b"-b", k.bootstrap.encode()] + \
            [a.encode() for a in KCAT_X] + [b"-P", b"-t",
                k.name("orders").encode(), b"-p", b"0", b"-k", key]
        for h in headers:
            args += [b"-H", h]
        r = subprocess.run(args + [f.name.encode()], capture_output=True,
                           timeout=15)
        check(r.returncode == 0, "kcat produced %r" % key)


# ---- routes ----------------------------------------------------------------

def routes_behave(h, body):
    key = h.get("kretry-key", "")
    attempt = int(h.get("kretry-attempt", "0"))
    if key.startswith("s") and key[1:4].isdigit():
        return int(key[1:4]), [], "status %s on attempt %d\nmore" % (
            key[1:4], attempt)
    if key == "code":
        return 422, [("Kretry-Error-Code", "VALIDATION")], \
            "amount is negative\nsecond line"
    if key == "empty503":
        return 503, [], ""
    if key == "after-secs":
        return (503, [("Retry-After", "2")], "busy") if attempt == 1 else \
            (200, [], "")
    if key == "after-date":
        when = email.utils.formatdate(time.time() + 4, usegmt=True)
        return (503, [("Retry-After", when)], "busy") if attempt == 1 else \
            (200, [], "")
    if key == "redir":
        return 302, [("Location", "http://elsewhere.invalid/x")], ""
    if key == "hang":  # well past --http-timeout
        time.sleep(4)
        return 200, [], ""
    if key == "flaky":
        return (503, [], "down for a moment") if attempt == 1 else \
            (200, [], "")
    return 204, [], ""


def routes_check_requests(k, srv, binkey):
    ok = srv.by_key("ok")
    check(len(ok) == 1, "ok: one request (%d)" % len(ok))
    h, body, _ = ok[0]
    check(body == b"hello", "ok: the value is the body")
    src = k.name("orders")
    want = {"ce-specversion": "1.0", "ce-source": src,
            "ce-type": "kretry.message", "kretry-attempt": "1",
            "kretry-topic": src, "kretry-partition": "0",
            "content-type": "application/octet-stream",
            "authorization": "Bearer s3cret-token"}
    bad = {k: h.get(k) for k, v in want.items() if h.get(k) != v}
    check(not bad, "ok: metadata and --http-header headers (%s)" % bad)
    off = h.get("kretry-offset", "")
    check(off.isdigit() and h.get("ce-id") == src + "/0/" + off and
          h.get("ce-subject") == "0/" + off,
          "ok: ce-id %s/0/OFFSET, ce-subject 0/OFFSET (%s, %s)" %
          (src, h.get("ce-id"), h.get("ce-subject")))
    check(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$",
                   h.get("ce-time", "")) is not None,
          "ok: ce-time is RFC 3339 UTC (%s)" % h.get("ce-time"))
    check("kretry-key-encoding" not in h and "expect" not in h,
          "ok: a printable key is sent as is; no Expect: 100-continue")

    nv = srv.by_key("nullvalue")
    check(len(nv) == 1 and nv[0][1] == b"" and
          nv[0][0].get("kretry-value-null") == "true",
          "a null value: an empty body and Kretry-Value-Null: true")
    check("kretry-value-null" not in ok[0][0],
          "a value that is not null has no Kretry-Value-Null")
    with srv.lock:
        nk = [r for r in srv.requests if "kretry-key" not in r[0]]
    check(len(nk) == 1 and nk[0][1] == b"no-key-line",
          "a null key: no Kretry-Key header")

    enc = base64.b64encode(binkey).decode()
    bins = srv.by_key(enc)
    check(len(bins) == 1, "binary key: one request under its base64 key")
    h, body, _ = bins[0]
    check(h.get("kretry-key-encoding") == "base64",
          "binary key: Kretry-Key-Encoding: base64")
    check(body == BINARY, "binary value: the body byte for byte (%d bytes)" %
          len(body))
    check(h.get("kafka-header-trace") == "abc-123",
          "a valid Kafka header arrives as Kafka-Header-trace")
    check(not any(k.startswith("kafka-header-") and k != "kafka-header-trace"
                  for k in h),
          "invalid header names or values are not forwarded (%s)" %
          sorted(k for k in h if k.startswith("kafka-header-")))
    # One request in flight: every request reuses the same one, and the
    # retries come after the binary key's and the null value's.
    with srv.lock:
        heads = [r[0] for r in srv.requests]
    leaked = [x.get("kretry-key") for x in heads
              if x.get("kretry-key") != enc and
              ("kretry-key-encoding" in x or "kafka-header-trace" in x or
               "kretry-value-null" in x and x.get("kretry-key") != "nullvalue")]
    check(not leaked and all(len(x) == len(ok[0][0]) for x in heads
                             if x.get("kretry-key") in RETRIED),
          "a reused request carries none of an earlier one's headers (%s)" %
          leaked)

    s503 = srv.by_key("s503")
    check([r[0]["kretry-attempt"] for r in s503] == ["1", "2"] and
          s503[1][0]["kretry-topic"] == k.name("orders.retry.1"),
          "503: retried through tier 1, attempt 2 from %s" %
          k.name("orders.retry.1"))
    for key in RETRIED:
        check(len(srv.by_key(key)) == 2, "%s: retried (2 attempts)" % key)
    for key in FAILED:
        check(len(srv.by_key(key)) == 1, "%s: not retried" % key)
    for key, tier in (("after-secs", k.name("orders.retry.2")),
                      ("after-date", k.name("orders.retry.3"))):
        r = srv.by_key(key)
        check(len(r) == 2 and r[1][0]["kretry-topic"] == tier,
              "%s: Retry-After picks %s (%s)" %
              (key, tier, [x[0]["kretry-topic"] for x in r]))


def routes_check_dlq(dlq):
    def has(key, *parts):
        got = dlq.get(key, "")
        check(all(p in got for p in parts), "%s in the DLQ with %s (%s)" %
              (key, ", ".join(parts), got))
    has("s400", "kretry-error-class=permanent", "kretry-error-code=HTTP_400",
        "kretry-error=status 400 on attempt 1")
    has("s503", "kretry-error-class=exhausted", "kretry-error-code=HTTP_503",
        "kretry-error=status 503 on attempt 2")
    has("code", "kretry-error-class=permanent",
        "kretry-error-code=VALIDATION", "kretry-error=amount is negative")
    has("empty503", "kretry-error-code=HTTP_503",
        "kretry-error=HTTP 503 Service Unavailable")
    has("redir", "kretry-error-class=permanent", "kretry-error-code=HTTP_302",
        "redirect to http://elsewhere.invalid/x not followed")
    has("hang", "kretry-error-class=exhausted", "kretry-error-code=TIMEOUT")
    has("s409", "kretry-error-class=exhausted")
    has("s502", "kretry-error-class=permanent")
    check(sorted(dlq) == sorted(RETRIED + FAILED),
          "the DLQ holds the retried and failed keys only (%s)" %
          sorted(dlq))
    for k in ("ok", "flaky", "after-secs", "after-date"):
        check(k not in dlq, "%s: not in the DLQ" % k)


# With --http-retry-status 409 --http-fail-status 502.
RETRIED = ["s408", "s425", "s429", "s500", "s503", "s504", "s409",
           "empty503", "hang"]
FAILED = ["s400", "s404", "s501", "s302", "s502", "code", "redir"]


class Case:
    """What a mode starts: the cluster (bbkafka.Cluster: its bootstrap, the
    topic and group names), the servers and the kretry run it makes through
    server() and run(); main() reports a failure with kretry run's stderr
    and stops them all."""

    def __init__(self, cli, k):
        self.cli = cli
        self.k = k
        self.servers = []
        self.proc = None

    def server(self, behave, port=0, tls=None):
        self.servers.append(Server(behave, port, tls))
        return self.servers[-1]

    def run(self, group, args, env=None, base=None):
        self.proc = Run(self.cli, self.k, group, args, env, base)
        return self.proc

    def stop_run(self):
        rc = self.proc.stop()
        check(rc == 0, "SIGTERM stops kretry run with exit 0 (got %d)" % rc)
        return self.proc.stderr_text()

    def close(self):
        if self.proc:
            self.proc.kill()
        for srv in self.servers:
            srv.stop()


def mode_routes(c):
    srv = c.server(routes_behave)
    keys = ["ok", "flaky", "after-secs", "after-date"] + RETRIED + FAILED
    binkey = b"\xff\x01k\x80"
    produce_lines(c.k, [(k, "hello") for k in keys])
    # a null value (kcat -Z: empty is null) and a null key (no delimiter)
    kcat(c.k.bootstrap, ["-P", "-t", c.k.name("orders"), "-p", "0", "-K",
                         ":", "-Z"],
         stdin=b"nullvalue:\nno-key-line\n")
    produce_file(c.k, binkey, BINARY,
                 [b"trace=abc-123", b"bad name=x", b"utf8=\xc3\xa9",
                  b"ctl=a\x01b"])
    c.run("bb-http",
          ["--tiers", "100ms,2500ms,4s", "--max-attempts", "2",
           # a timeout that a loaded machine's answers still meet (a
           # 500 ms one timed a 503 out at load 25)
           "--http", srv.url, "--http-timeout", "2s",
           "--http-header", "Authorization: Bearer ${TOKEN}",
           "--http-retry-status", "409", "--http-fail-status", "502"],
          env={"TOKEN": "s3cret-token"})
    dlq = read_dlq(c.k, len(RETRIED + FAILED), 30)
    check(wait_until(lambda: len(srv.by_key("after-date")) >= 2, 15),
          "after-date: answered on its second attempt")
    routes_check_requests(c.k, srv, binkey)
    routes_check_dlq(dlq)
    check("s3cret-token" not in c.stop_run(),
          "a header value is never logged")


# ---- concurrency -----------------------------------------------------------

CONC_KEYS = ["k%d" % i for i in range(8)]
CONC_PER_KEY = 5


def conc_behave(h, body):
    time.sleep(0.15)
    return 204, [], ""


def mode_concurrency(c):
    srv = c.server(conc_behave)
    want = len(CONC_KEYS) * CONC_PER_KEY
    produce_lines(c.k, [(k, "%s-%d" % (k, i)) for i in range(CONC_PER_KEY)
                        for k in CONC_KEYS])
    c.run("bb-http-conc", ["--tiers", "100ms", "--concurrency", "4",
                           "-X", "ordering=key", "--http", srv.url])
    check(wait_until(lambda: len(srv.requests) >= want, 40),
          "%d requests answered (%d)" % (want, len(srv.requests)))
    check(srv.open_max == 4,
          "4 requests at once, never more (most seen: %d)" % srv.open_max)
    check(not srv.key_overlap,
          "never two requests of one key open (%s)" % srv.key_overlap)
    for k in CONC_KEYS:
        got = [r[1].decode() for r in srv.by_key(k)]
        check(got == ["%s-%d" % (k, i) for i in range(CONC_PER_KEY)],
              "%s: its messages in order, once each" % k)
    ports = {r[2] for r in srv.requests}
    check(len(ports) <= 8,
          "connections reused: %d requests over %d connections" %
          (len(srv.requests), len(ports)))
    c.stop_run()


# ---- requests built ahead ---------------------------------------------------

def mode_ahead(c):
    """The adapter holds as many messages again as requests may be open:
    with every answer held back, 2 requests are open and the handler was
    called for 2 more, whose requests wait built for a slot."""
    gate = threading.Event()

    def behave(h, body):
        gate.wait(20)
        return 204, [], ""
    srv = c.server(behave)
    produce_lines(c.k, [("a%d" % i, "v%d" % i) for i in range(10)])
    run = c.run("bb-http-ahead", ["--tiers", "100ms", "--concurrency", "2",
                                  "-X", "revoke.timeout.ms=300",
                                  "--http", srv.url])
    try:
        check(wait_until(lambda: srv.open_now == 2, 20),
              "2 requests open (%d)" % srv.open_now)
        time.sleep(1.0)  # the polling thread hands over what it may
        check(srv.open_max == 2 and len(srv.requests) == 2,
              "never more than 2 open (most seen %d, %d arrived)" %
              (srv.open_max, len(srv.requests)))
        # A clean stop: SIGTERM, then the held answers come back (204), so
        # the messages in flight finish and are committed; the documented
        # status is then 0 (1 would be a stop cut short at its bound, a
        # negative one a signal: a crash while stopping).
        run.proc.send_signal(signal.SIGTERM)
        check(wait_until(lambda: "stopping after the current message" in
                         run.stderr_text(), 10), "SIGTERM: kretry run stops")
        gate.set()
        rc = run.proc.wait(timeout=40)
        check(rc == 0, "SIGTERM stops kretry run with exit 0 once the "
              "answers came back (got %d)" % rc)
    finally:
        gate.set()
    m = re.search(r'"handler_calls": *(\d+)', run.stderr_text())
    calls = int(m.group(1)) if m else -1
    check(calls == 4, "the handler was called for 4 messages: 2 open, 2 "
          "built and waiting (%d)" % calls)


# ---- endpoint down, then back ---------------------------------------------

def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mode_down(c):
    port = free_port()
    keys = ["d%d" % i for i in range(10)]
    produce_lines(c.k, [(k, k) for k in keys])
    # Without the breaker, the 10 messages make about 90 attempts in 3 s
    # here (a hop through the 100 ms tier takes ~0.1-0.6 s on the mock).
    run = c.run("bb-http-down",
                ["--tiers", "100ms", "--max-attempts", "10",
                 "-X", "breaker.failures=3", "-X", "breaker.cooldown=500ms",
                 "--http", "http://127.0.0.1:%d/events" % port])
    check(wait_until(lambda: "-> retry tier" in run.stderr_text(), 15),
          "connection refused: RETRY")
    check(wait_until(lambda: "circuit open" in run.stderr_text(), 5),
          "connection refused opens the breaker")
    time.sleep(3)
    tries = run.stderr_text().count("-> retry tier")
    check(tries <= 12, "3 s down: %d attempts, not one per message and "
          "tier hop" % tries)
    dlq = read_dlq(c.k, 1, 0)
    check(not dlq, "3 s down: nothing dead-lettered (%s)" % sorted(dlq))
    srv = c.server(lambda h, body: (204, [], ""), port)
    check(wait_until(lambda: all(srv.by_key(k) for k in keys), 30),
          "the endpoint back: every message delivered (%d of %d)" %
          (sum(1 for k in keys if srv.by_key(k)), len(keys)))
    check(not read_dlq(c.k, 1, 0), "nothing in the DLQ")
    m = re.search(r'"breaker_trips":(\d+)', c.stop_run())
    check(m and int(m.group(1)) >= 1,
          "the counters show the breaker's trips (%s)" %
          (m.group(1) if m else None))


# ---- handler.http in a topology file --------------------------------------

TOPOLOGY = """
topologies:
  - source: %s
    group: %s
    retry: { tiers: [100ms], jitter: 0%% }
    handler:
      http:
        url: %s
        timeout: 300ms
        headers:
          Authorization: "Bearer ${TOKEN}"
        content_type: application/x-orders
        fail_statuses: "503"
"""


def topo_behave(h, body):
    key = h.get("kretry-key", "")
    if key == "slow":
        time.sleep(1)
    return (503, [], "down") if key == "s503" else (204, [], "")


def mode_topology(c):
    srv = c.server(topo_behave)
    produce_lines(c.k, [("ok", "v1"), ("s503", "v2"), ("slow", "v3")])
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(TOPOLOGY % (c.k.name("orders"),
                            c.k.group("bb-http-topology"), srv.url))
        f.flush()
        c.run("bb-http-topology", [], env={"TOKEN": "t0ken"},
              base=["--topology", f.name])
        dlq = read_dlq(c.k, 2, 30)
    ok = srv.by_key("ok")
    check(len(ok) == 1 and ok[0][1] == b"v1", "ok: posted once, its body")
    check(ok[0][0].get("authorization") == "Bearer t0ken" and
          ok[0][0].get("content-type") == "application/x-orders",
          "the file's headers (${TOKEN} expanded) and content_type")
    check(len(srv.by_key("s503")) == 1 and
          "kretry-error-class=permanent" in dlq.get("s503", ""),
          "fail_statuses: 503 dead-lettered at once (%s)" % dlq.get("s503"))
    check(len(srv.by_key("slow")) == 2 and
          "kretry-error-code=TIMEOUT" in dlq.get("slow", ""),
          "timeout: 300ms: a 1 s answer times out, twice (%s)" %
          dlq.get("slow"))
    check("t0ken" not in c.stop_run(), "the header value is never logged")


# ---- headers that frame or route the request -------------------------------

# Each refused however it is spelled: a user's Content-Length (or any of
# these) makes the service read the body as the next request, so messages
# it never received are marked OK.
FRAMING = ["Content-Length: 0", "content-length:0", "Transfer-Encoding: chunked",
           "HOST: elsewhere", "Host:\tx", "Connection: close",
           "Keep-Alive: timeout=5", "TE: trailers", "trailer: X-Sum",
           "Upgrade: h2c", "Expect: 100-continue",
           "Proxy-Authorization: Basic eA==", "Content-Length:",
           "Content-Length : 0", " Host: x", "X-A: b\r\nContent-Length: 0"]

FRAMING_TOPOLOGY = """
topologies:
  - source: %s
    group: %s
    retry: { tiers: [100ms], jitter: 0%% }
    handler:
      http:
        url: %s
        headers:
          %s: "0"
"""


def refused_at_start(c, args, what, base=None):
    """kretry run with @args exits 64 at once, saying why; no request."""
    r = c.run("bb-http-framing", args, base=base)
    try:
        rc = r.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        rc = None
    err = r.stderr_text()
    r.kill()
    check(rc == 64 and ("refused" in err or "valid header name" in err or
                        "not header text" in err),
          "%s: exit 64 with the reason (exit %s, stderr %r)" %
          (what, rc, err[-300:]))


def mode_framing(c):
    srv = c.server(lambda h, body: (204, [], ""))
    produce_lines(c.k, [("k1", "v1")])
    for h in FRAMING:
        refused_at_start(c, ["--http", srv.url, "--http-header", h],
                         "--http-header %r" % h)
    for name in ("Content-Length", "transfer-encoding", "Host",
                 "Proxy-Connection"):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write(FRAMING_TOPOLOGY % (c.k.name("orders"),
                                        c.k.group("bb-http-framing"), srv.url,
                                        name))
            f.flush()
            refused_at_start(c, [], "handler.http.headers %s" % name,
                             base=["--topology", f.name])
            v = subprocess.run([c.cli, "topology", "validate", f.name],
                               capture_output=True, text=True, timeout=15)
            check(v.returncode != 0 and "%s: refused" % name in v.stderr,
                  "topology validate refuses %s too (%d: %s)" %
                  (name, v.returncode, v.stderr))
    check(not srv.requests, "no request reached the service (%d)" %
          len(srv.requests))


# ---- --http-body json ------------------------------------------------------

ORDER_AVSC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                          "schemas", "examples", "order.avsc")


def avro_encode(record):
    import avro.io
    import avro.schema
    with open(ORDER_AVSC) as f:
        schema = avro.schema.parse(f.read())
    out = io.BytesIO()
    avro.io.DatumWriter(schema).write(record, avro.io.BinaryEncoder(out))
    return out.getvalue()


def mode_avro(c):
    try:
        import avro.io  # noqa: F401
    except ImportError:
        print("SKIP: python3-avro is not installed (Debian package "
              "python3-avro)")
        sys.exit(SKIP)
    orders = [{"order_id": "o-%d" % i, "version": i, "customer": "c-9",
               "amount_cents": 1250 + i, "currency": "EUR", "status": "PAID",
               "express": i % 2 == 0, "items": [{"sku": "A-1", "quantity": i}],
               "note": "gift" if i % 2 else None} for i in range(6)]
    srv = c.server(lambda h, body: (time.sleep(0.1), (204, [], ""))[1])
    for o in orders:
        produce_file(c.k, o["order_id"].encode(), avro_encode(o))
    c.run("bb-http-avro", ["--http", srv.url, "--http-body", "json",
                           "--concurrency", "4",
                           "-X", "value.format=avro",
                           "-X", "value.schema=" + ORDER_AVSC])
    check(wait_until(lambda: all(srv.by_key(o["order_id"]) for o in orders),
                     20), "every order is posted")
    check(srv.open_max > 1, "several requests at once (%d)" % srv.open_max)
    for o in orders:
        h, body, _ = srv.by_key(o["order_id"])[0]
        want = dict(o, note={"string": o["note"]} if o["note"] else None)
        check(h.get("content-type") == "application/json" and
              json.loads(body) == want,
              "%s: its own record as JSON (unions as {type: value}), "
              "application/json: %s" % (o["order_id"],
                                        body.decode(errors="replace")))
    c.stop_run()


# ---- https -----------------------------------------------------------------

def make_certs(d):
    """A CA, a server certificate for 127.0.0.1 and a client certificate,
    all signed by it, with openssl."""
    def ossl(*args):
        r = subprocess.run(["openssl"] + list(args), cwd=d,
                           capture_output=True, timeout=30)
        check(r.returncode == 0, "openssl %s" % args[0])
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
          "-nodes"]
    ossl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem",
         "-subj", "/CN=kretry-test-ca", "-days", "1")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    for who, ext in (("srv", ["-extfile", "san.ext"]), ("cli", [])):
        ossl("req", *ec, "-keyout", who + ".key", "-out", who + ".csr",
             "-subj", "/CN=" + who)
        ossl("x509", "-req", "-in", who + ".csr", "-CA", "ca.pem", "-CAkey",
             "ca.key", "-CAcreateserial", "-out", who + ".pem", "-days", "1",
             *ext)


def mode_tls(c):
    import ssl
    if not shutil.which("openssl"):
        print("SKIP: openssl is not installed (Debian package openssl)")
        sys.exit(SKIP)
    d = tempfile.mkdtemp()
    try:
        make_certs(d)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(d, "srv.pem"),
                            os.path.join(d, "srv.key"))
        ctx.verify_mode = ssl.CERT_REQUIRED  # a client certificate too
        ctx.load_verify_locations(os.path.join(d, "ca.pem"))
        srv = c.server(lambda h, body: (204, [], ""), tls=ctx)
        produce_lines(c.k, [("t1", "v1"), ("t2", "v2")])
        c.run("bb-http-tls", ["--http", srv.url,
                              "--http-ca", os.path.join(d, "ca.pem"),
                              "--http-cert", os.path.join(d, "cli.pem"),
                              "--http-key", os.path.join(d, "cli.key")])
        check(wait_until(lambda: srv.by_key("t1") and srv.by_key("t2"), 20),
              "https with the CA and a client certificate: both posted")
        c.stop_run()
        check(not read_dlq(c.k, 1, 0), "nothing dead-lettered")
        # The same without --http-ca: the server is not trusted.
        c.run("bb-http-tls-noca", ["--http", srv.url, "--max-attempts", "1",
                                   "--http-cert", os.path.join(d, "cli.pem"),
                                   "--http-key", os.path.join(d, "cli.key")])
        dlq = read_dlq(c.k, 2, 20)
        check(all("kretry-error-code=TLS" in dlq.get(k, "")
                  for k in ("t1", "t2")),
              "without the CA: a TLS failure, retried (here exhausted at "
              "once): %s" % dlq)
        check(len(srv.requests) == 2, "and nothing reached the server")
        c.stop_run()
    finally:
        shutil.rmtree(d, ignore_errors=True)


MODES = {"routes": mode_routes, "concurrency": mode_concurrency,
         "ahead": mode_ahead,
         "down": mode_down, "topology": mode_topology, "avro": mode_avro,
         "tls": mode_tls, "framing": mode_framing}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in MODES:
        print(__doc__)
        return 2
    if not shutil.which("kcat"):
        print("SKIP: kcat is not installed (Debian package kcat)")
        return SKIP
    t0 = time.monotonic()
    broker = Cluster(chain("orders", 1, 3)).start(sys.argv[1])
    c = Case(sys.argv[1], broker)
    rc = 0
    try:
        MODES[sys.argv[2]](c)
    except Exception as e:
        print("FAIL:", e)
        if c.proc:
            print("--- kretry run stderr ---\n" + c.proc.stderr_text())
        rc = 1
    finally:
        c.close()
        broker.kill()
    print("# blackbox_http %s: %.1fs" % (sys.argv[2], time.monotonic() - t0))
    return rc


if __name__ == "__main__":
    sys.exit(main())
