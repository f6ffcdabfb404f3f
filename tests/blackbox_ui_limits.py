#!/usr/bin/python3
"""Black-box test of what `kretry ui` (docs/ui.md, Security) does against
clients that are slow or hostile, at the socket level:

- 300 connections that never finish their request line, from 127.0.0.1
  like the legitimate GET after them (every client on loopback, or behind
  a reverse proxy, has one address), do not keep it from answering
  within 1 s, with and without a token, and cost no thread each (the
  process stays under MAX_THREADS); beyond WAITING connections waiting
  for their headers the oldest are closed at once, the newest kept; a
  stalled connection is closed after the header deadline (5 s), and so is
  one that sends its headers a byte a second.
- 60 parallel requests that wait on the cluster are answered by a fixed
  pool, with at most MAX_THREADS threads at their peak.
- the request rules: two Host headers are 400, a POST's Content-Type must
  be application/json exactly (parameters allowed; application/jsonx is
  415), an unknown error class is 400, a query string over the limit is
  414 like a long path.

usage: blackbox_ui_limits.py PATH/TO/kretry
Exit 0 on success, 1 on failure, 77 (skipped) when kafka-python is
missing.
"""
from http.client import HTTPConnection
import os
import select
import socket
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ui_seed import SKIP, UI, check, http, seed, start_cluster  # noqa: E402

TOKEN = "0123456789abcdef-secret"
STALLED = 300        # from 127.0.0.1, the legitimate requests' address
WAITING = 128        # connections the server lets wait for their headers
HEADER_DEADLINE = 5  # the time the server gives a request's headers
MAX_THREADS = 60     # a thread per connection would be 200 and more


def skip_if_missing():
    try:
        import kafka  # noqa: F401
    except ImportError as e:
        print("SKIPPED: blackbox_ui_limits: %s (Debian package python3-kafka)"
              % e)
        sys.exit(SKIP)


def addr(url):
    u = urllib.parse.urlparse(url)
    return u.hostname, u.port


def stall(url, source):
    """A connection from @source that sends half a request line and then
    nothing."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(5)
    s.connect(addr(url))
    s.sendall(b"GET /api/topologies HTT")
    return s


def closed(s, timeout):
    """1 when the server closed @s (EOF or reset) within @timeout s."""
    r, _, _ = select.select([s], [], [], timeout)
    if not r:
        return 0
    try:
        return s.recv(64) == b""
    except OSError:
        return 1


def closed_of(socks, want, timeout):
    """How many of @socks the server closes within @timeout s (waiting
    until @want are)."""
    open_, done = list(socks), 0
    deadline = time.monotonic() + timeout
    while open_ and done < want:
        left = deadline - time.monotonic()
        r, _, _ = select.select(open_, [], [], max(left, 0))
        if not r:
            break
        for s in r:
            open_.remove(s)
            done += closed(s, 0)
    return done


def threads(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def timed_get(url, headers=None):
    t0 = time.monotonic()
    try:
        status, _, body = http(url, headers=headers, timeout=5)
    except OSError as e:  # no answer at all: a status of 0
        status, body = 0, str(e).encode()
    return status, time.monotonic() - t0, body


def step_stalled(ui, headers=None, what="no token"):
    # the server's first round of figures, which the first request after
    # start waits for (a cluster's answer, not a connection's)
    status, _, _ = http(ui.url + "api/topologies", headers=headers,
                        timeout=60)
    check(status == 200, "GET /api/topologies before: %d" % status)
    socks = []
    try:
        for _ in range(STALLED):
            socks.append(stall(ui.url, "127.0.0.1"))
        t_last = time.monotonic()
        # the server has seen them all once a request after them is
        # answered (connections are accepted in order); it comes from the
        # stalled connections' address
        status, took, body = timed_get(ui.url, headers)
        check(status == 200 and b"<html" in body[:200].lower(),
              "GET / with %d stalled connections from its address: %d %r"
              % (len(socks), status, body[:200]))
        check(took < 1.0, "GET / took %.2f s with %d stalled connections "
              "from its address (%s)" % (took, len(socks), what))
        status, took2, _ = timed_get(ui.url + "api/topologies", headers)
        check(status == 200 and took2 < 1.0,
              "GET /api/topologies: %d in %.2f s" % (status, took2))
        n = threads(ui.proc.pid)
        check(n <= MAX_THREADS, "kretry ui runs %d threads with %d "
              "connections open" % (n, len(socks)))
        # the oldest beyond WAITING are shed at once (well before the
        # header deadline), the newest kept: each of the two GETs above
        # sheds one more on its arrival
        shed = STALLED - WAITING
        dropped = closed_of(socks, shed, 2)
        gone = [i for i, sk in enumerate(socks) if closed(sk, 0)]
        check(dropped >= shed, "%d of %d stalled connections shed, expected "
              "%d or more" % (dropped, STALLED, shed))
        check(not gone or max(gone) < shed + 4,
              "the oldest are shed, the newest kept: #%s closed too"
              % [i for i in gone if i >= shed + 4][:10])
        print("ok (%s): GET / in %.3f s with %d stalled connections open "
              "from its address, %d threads, %d oldest shed"
              % (what, took, len(socks), n, dropped))
        return socks, t_last
    except BaseException:
        for s in socks:
            s.close()
        raise


def step_parallel(ui):
    """60 parallel requests that wait on the cluster: a fixed pool answers
    them all (200, or 503 when too many wait), with a bounded number of
    threads (a thread per connection reached 542)."""
    results, peak = [], [0]
    done = threading.Event()

    def one(i):
        # fifteen from each of four client addresses
        host, port = addr(ui.url)
        c = HTTPConnection(
            host, port, timeout=60, source_address=("127.0.0.%d" % (30 + i % 4),
                                                    0))
        try:
            c.request("GET", "/api/dlq?limit=5", headers={"Host": "%s:%d"
                                                          % (host, port)})
            r = c.getresponse()
            r.read()
            results.append(r.status)
        except OSError as e:
            results.append(str(e))
        finally:
            c.close()

    def watch():
        while not done.wait(0.02):  # sampled while they run
            peak[0] = max(peak[0], threads(ui.proc.pid))
    w = threading.Thread(target=watch)
    w.start()
    ts = [threading.Thread(target=one, args=(i,)) for i in range(60)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    done.set()
    w.join()
    check(len(results) == 60 and all(st in (200, 503) for st in results) and
          results.count(200) >= 4, "60 parallel /api/dlq: %r" % results)
    check(peak[0] <= MAX_THREADS, "%d threads at the peak of 60 parallel "
          "requests" % peak[0])
    print("ok: 60 parallel DLQ reads: %d answered, %d busy (503), at most %d "
          "threads" % (results.count(200), results.count(503), peak[0]))


def step_header_deadline(socks, t_last):
    """A stalled connection that was not shed (the newest) is closed once
    its headers took the deadline."""
    check(closed(socks[-1], HEADER_DEADLINE + 10),
          "a stalled connection still open after %d s"
          % (HEADER_DEADLINE + 10))
    took = time.monotonic() - t_last
    check(took >= HEADER_DEADLINE - 1, "closed after %.1f s" % took)
    print("ok: a stalled connection closed after %.1f s" % took)
    for s in socks:
        s.close()


def step_trickle(url):
    """A connection that sends its headers a byte a second is never idle,
    yet is closed once its headers took HEADER_DEADLINE."""
    host, port = addr(url)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.50", 0))
    s.connect((host, port))
    t0 = time.monotonic()
    s.sendall(b"GET / HTTP/1.1\r\nHost: %s:%d\r\nX-Slow: "
              % (host.encode(), port))
    sent, gone = 0, False
    try:
        # the wait for the server to close it paces the bytes
        while time.monotonic() - t0 < HEADER_DEADLINE + 10:
            if closed(s, 1.0):
                gone = True
                break
            try:
                s.sendall(b"x")
                sent += 1
            except OSError:
                gone = True
                break
    finally:
        s.close()
    took = time.monotonic() - t0
    check(gone, "a connection sending its headers a byte a second still "
          "open after %.1f s" % took)
    check(took >= HEADER_DEADLINE - 1 and sent >= HEADER_DEADLINE - 2,
          "closed after %.1f s, %d bytes sent" % (took, sent))
    print("ok: headers sent a byte a second: closed after %.1f s (%d bytes)"
          % (took, sent))


def raw(url, request):
    """The status of a raw @request (bytes), sent on its own socket."""
    s = socket.create_connection(addr(url), timeout=10)
    try:
        s.sendall(request)
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return int(data.split(b" ", 2)[1]) if data else 0
    finally:
        s.close()


def step_request_rules(url):
    host, port = addr(url)
    good = ("%s:%d" % (host, port)).encode()
    one = b"GET / HTTP/1.1\r\nHost: " + good + b"\r\n\r\n"
    check(raw(url, one) == 200, "one Host header refused")
    for second in (b"evil.example", good):
        two = (b"GET / HTTP/1.1\r\nHost: " + good + b"\r\nHost: " + second +
               b"\r\n\r\n")
        st = raw(url, two)
        check(st == 400, "two Host headers (%s): %d" % (second, st))
    # the media type exactly; parameters allowed
    body = {"bogus": 1}  # an unknown field: a 400 past the type check
    for ctype, want in (("application/json", 400),
                        ("application/json; charset=utf-8", 400),
                        ("application/jsonx", 415),
                        ("application/json-patch+json", 415),
                        ("text/plain", 415)):
        st, _, b = http(url + "api/replay", "POST", body,
                        {"Content-Type": ctype})
        check(st == want, "Content-Type %s: %d %s, expected %d"
              % (ctype, st, b[:200], want))
    # unknown values of a filter are malformed input
    for path in ("api/dlq?class=bogus", "api/export?class=bogus"):
        st, _, b = http(url + path)
        check(st == 400 and b"bogus" in b, "%s: %d %s" % (path, st, b[:200]))
    st, _, b = http(url + "api/replay", "POST",
                    {"dry_run": True, "filter": {"class": "bogus"}})
    check(st == 400, "replay filter class=bogus: %d %s" % (st, b[:200]))
    st, _, _ = http(url + "api/dlq?class=exhausted&limit=1")
    check(st == 200, "class=exhausted: %d" % st)
    # a query string over the limit is 414 like a long path (each
    # parameter under its own limit)
    q = "&".join("code=%s" % ("c" * 200) for _ in range(6))
    st, _, b = http(url + "api/dlq?" + q)
    check(st == 414, "a %d-byte query: %d %s" % (len(q), st, b[:200]))
    st, _, _ = http(url + "api/" + "x" * 1100)
    check(st == 414, "a long path: %d" % st)
    print("ok: one Host only, JSON media type exactly, class=bogus 400, "
          "long query 414")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    cli = sys.argv[1]
    skip_if_missing()
    d = tempfile.mkdtemp(prefix="kretry-ui-limits-")
    broker, path = start_cluster(cli, d)
    uis = []
    try:
        seed(broker)
        ui = UI(cli, ["--topology", path, "--bootstrap", broker.bootstrap,
                      "--listen", "127.0.0.1:0"])
        uis.append(ui)
        step_request_rules(ui.url)
        step_parallel(ui)
        socks, t_last = step_stalled(ui)
        step_header_deadline(socks, t_last)
        step_trickle(ui.url)
        env = dict(os.environ, KRETRY_UI_TOKEN=TOKEN)
        tok = UI(cli, ["--topology", path, "--bootstrap", broker.bootstrap,
                       "--listen", "127.0.0.1:0"], env=env)
        uis.append(tok)
        socks, _ = step_stalled(tok, {"Authorization": "Bearer " + TOKEN},
                             "token")
        for s in socks:
            s.close()
        st, took, _ = timed_get(tok.url)
        check(st == 401 and took < 1.0, "no token: %d in %.2f s" % (st, took))
        for u in uis:
            check(u.stop() == 0, "SIGTERM: exit status")
        return 0
    except AssertionError as e:
        print("FAIL: %s" % e)
        for u in uis:
            print("kretry ui stderr:\n" + u.stderr_text())
        return 1
    finally:
        for u in uis:
            u.kill()
        broker.kill()


if __name__ == "__main__":
    sys.exit(main())
