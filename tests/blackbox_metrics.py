#!/usr/bin/python3
"""Black-box test of `kretry run --metrics` on `kretry dev-broker` (or the
real cluster in KRETRY_TEST_BOOTSTRAP, bbkafka.py), as an orchestrator
and Prometheus see it: the port kretry prints, /readyz 503 until the group
assigned this member its partitions (held meanwhile by another member, so
that no assignment can arrive while kretry's loop turns) and 200 then,
/metrics with the expected figures that follow the messages handled,
/healthz, 404 and 405, an address already in use refused with exit 64,
an idle member (more members than partitions) ready too, and once
SIGTERM arrives /readyz 503 while the message in flight finishes, then
exit 0; a polling thread held past the bound turns /healthz 503, and
200 again once it returns.

usage: blackbox_metrics.py PATH/TO/kretry
Exit 0 on success, 1 on failure, 77 (skipped) when kcat is missing.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import chain, check, group_x, kcat, service_x  # noqa: E402
from blackbox_run import MOCK_X, Setup, wait_for  # noqa: E402

# "slow" is still in the handler when SIGTERM arrives; "fail" dead-letters.
HANDLER = r"""
v=$(cat)
echo "key=$KRETRY_KEY attempt=$KRETRY_ATTEMPT" >> "$LOG"
case "$KRETRY_KEY" in
slow) touch "$LOG.slow"; sleep 4 ;;
stall) touch "$LOG.stall"; sleep 11 ;;
fail) echo "bad input" >&2; exit 3 ;;
esac
exit 0
"""


def get(port, path, method="GET"):
    """(status, body, headers) of one request; status None when nothing
    listens."""
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                 method=method)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read().decode(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers
    except (ConnectionError, urllib.error.URLError):
        return None, "", {}


def await_cond(what, fn, timeout):
    """fn() until it returns a true value, at most @timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() > deadline:
            check(v, what)
            return v
        time.sleep(0.1)


class Run:
    """One `kretry run --metrics 127.0.0.1:0` with its stderr in a file."""

    def __init__(self, s, source, group, extra=()):
        self.err = tempfile.NamedTemporaryFile(delete=False)
        b = s.broker.bootstrap
        self.proc = subprocess.Popen(
            [s.cli, "run", "--bootstrap", b, "--source", s.broker.name(source),
             "--group", s.broker.group(group), "--tiers", "200ms",
             "--max-attempts", "2", "--jitter", "0",
             "--metrics", "127.0.0.1:0"] + MOCK_X + service_x() + list(extra) +
            ["--exec", "exec sh " + s.handler],
            env=dict(os.environ, LOG=s.log), stderr=self.err)
        self.port = await_cond("kretry run prints the metrics address",
                               self._port, 15)

    def stderr(self):
        with open(self.err.name, errors="replace") as f:
            return f.read()

    def _port(self):
        m = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics",
                      self.stderr())
        return int(m.group(1)) if m else None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.unlink(self.err.name)


def metric(text, name):
    """The value of sample @name (with its labels) in @text, or None."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def check_metrics(port, topic):
    names = ["kretry_consumed_total", "kretry_ok_total",
             "kretry_handler_calls_total", "kretry_inflight_messages",
             "kretry_breaker_open", "kretry_assigned_partitions",
             'kretry_retried_total{tier="1"}',
             'kretry_topic_waiting_messages{topic="%s"}' % topic,
             'kretry_partition_waiting_messages{topic="%s",partition="0"}'
             % topic]
    missing = []

    def complete():
        # Refreshed every second: the first render after the assignment
        # may come before the partitions' watermarks are known.
        # (503 before the first.)
        st, body, hdr = get(port, "/metrics")
        missing[:] = [n for n in names if metric(body, n) is None]
        return (st == 200 and not missing and
                "version=0.0.4" in hdr.get("Content-Type", "") and body)
    body = await_cond("/metrics 200, Prometheus text with %d expected "
                      "figures" % len(names), complete, 10)
    check(not missing, "... none missing (%s)" % missing)
    check(metric(body, "kretry_assigned_partitions") == 2,
          "kretry_assigned_partitions 2")


def check_follows(s, port):
    """The figures follow the messages handled."""
    _, body, _ = get(port, "/metrics")
    ok0 = metric(body, "kretry_ok_total")
    kcat(s.broker.bootstrap, ["-P", "-t", s.broker.name("orders"), "-K", ":"],
         stdin=b"a:1\nb:2\nc:3\nfail:4\n")
    check(len(wait_for(s.log, 4, 20)) >= 4, "4 handler calls")

    def counted():
        _, b, _ = get(port, "/metrics")
        return (metric(b, "kretry_ok_total") == ok0 + 3 and
                metric(b, 'kretry_dead_lettered_total{class="permanent"}')
                == 1)
    await_cond("/metrics follows: kretry_ok_total %d -> %d, one "
               "dead-lettered permanent" % (ok0, ok0 + 3), counted, 10)


def check_http(s, port):
    st, _, _ = get(port, "/healthz")
    check(st == 200, "/healthz 200 while the loop turns (%s)" % st)
    st, _, _ = get(port, "/nope")
    check(st == 404, "an unknown path: 404 (%s)" % st)
    st, _, hdr = get(port, "/metrics", "POST")
    check(st == 405 and "GET" in hdr.get("Allow", ""),
          "POST: 405 with Allow: GET, HEAD (%s)" % st)
    st, _, _ = get(port, "/readyz", "HEAD")
    check(st == 200, "HEAD /readyz 200 (%s)" % st)
    r = subprocess.run(
        [s.cli, "run", *group_x(), *service_x(), "--bootstrap",
         s.broker.bootstrap, "--source",
         "orders", "--group", "g", "--metrics", "127.0.0.1:%d" % port,
         "--exec", "true"], capture_output=True, timeout=30)
    err = r.stderr.decode(errors="replace")
    check(r.returncode == 64 and "Address already in use" in err,
          "an address in use: exit 64, \"%s\"" % err.strip())


def check_idle(s):
    """Two members, one partition: the one without a partition is ready
    too (an orchestrator would otherwise hold a rollout on it)."""
    runs = [Run(s, "solo", "bb-metrics-solo") for _ in range(2)]
    try:
        def both_ready():
            return all(get(r.port, "/readyz")[0] == 200 for r in runs)
        await_cond("both members of a one-partition group ready", both_ready,
                   60)
        parts = []

        def settled():
            # A cooperative rebalance revokes before it assigns: the
            # partition may be nobody's for a moment.
            parts[:] = sorted(metric(get(r.port, "/metrics")[1],
                                     "kretry_assigned_partitions") or 0
                              for r in runs)
            return parts == [0, 1]
        await_cond("one member has the partition, the idle one is ready "
                   "with none", settled, 30)
        check(both_ready(), "... both still ready")
    finally:
        for r in runs:
            r.kill()


def check_stall(s):
    """A handler on the polling thread (handler.thread poll) that keeps it
    past the bound, max(revoke.timeout.ms, 3 stats intervals) + 5 s = 8 s
    here: /healthz and /readyz 503 until it returns, 200 again after."""
    run = Run(s, "solo", "bb-metrics-stall",
              ["-X", "handler.thread=poll", "-X", "revoke.timeout.ms=1000"])
    try:
        await_cond("the stall member is ready",
                   lambda: get(run.port, "/readyz")[0] == 200, 60)
        kcat(s.broker.bootstrap, ["-P", "-t", s.broker.name("solo"), "-K",
                                  ":"], stdin=b"stall:1\n")
        await_cond("the stalling handler started",
                   lambda: os.path.exists(s.log + ".stall"), 20)
        t0 = time.monotonic()
        await_cond("/healthz 503 once the loop stalled past the bound",
                   lambda: get(run.port, "/healthz")[0] == 503, 15)
        took = time.monotonic() - t0
        check(took > 5, "... not before the bound (%.1fs)" % took)
        check(get(run.port, "/readyz")[0] == 503, "/readyz 503 meanwhile")
        await_cond("/healthz 200 again once the handler returned",
                   lambda: get(run.port, "/healthz")[0] == 200, 15)
    finally:
        run.kill()


def check_start(s):
    """/readyz 503 until the first assignment: the group is held by another
    member (kafka-python, with an assignor kretry does not share, so no
    assignment can reach kretry while it is there) while kretry's poll
    loop turns (/metrics 200: the topology check passed); 200 once that
    member has left. Returns the Run. Not under the consumer group
    protocol (KIP-848), where the broker may take kretry into a classic
    group with a member and assign it partitions: there only 503 or 200
    at start, then 200."""
    from kafka import KafkaConsumer
    from bbkafka import kafka_kwargs
    if os.environ.get("KRETRY_TEST_GROUP_PROTOCOL") == "consumer":
        run = Run(s, "orders", "bb-metrics")
        st, body, _ = get(run.port, "/readyz")
        print("# /readyz at start: %s %s (consumer group protocol: no "
              "member holds the group)" % (st, body.strip()))
        check(st in (200, 503), "/readyz answers from the start (%s)" % st)
        await_cond("/readyz 200 once the group assigned the partitions",
                   lambda: get(run.port, "/readyz")[0] == 200, 40)
        return run
    holder = KafkaConsumer(bootstrap_servers=s.broker.bootstrap,
                           group_id=s.broker.group("bb-metrics"),
                           session_timeout_ms=6000,
                           heartbeat_interval_ms=500, **kafka_kwargs())
    run = None
    try:
        holder.subscribe([s.broker.name("orders")])
        deadline = time.monotonic() + 40
        while not holder.assignment() and time.monotonic() < deadline:
            holder.poll(timeout_ms=100)
        check(holder.assignment(), "another member holds the group (%s)" %
              sorted(tp.partition for tp in holder.assignment()))
        run = Run(s, "orders", "bb-metrics")
        await_cond("kretry's poll loop turns (/metrics 200)",
                   lambda: get(run.port, "/metrics")[0] == 200, 30)
        st, body, _ = get(run.port, "/readyz")
        check(st == 503 and "waiting for the group" in body,
              "/readyz 503 before the first assignment (%s %s)" %
              (st, body.strip()))
        m = metric(get(run.port, "/metrics")[1], "kretry_assigned_partitions")
        check(m == 0, "... no partition assigned (%s)" % m)
    except Exception:
        if run:
            print("--- kretry run stderr ---\n" + run.stderr()[-2000:])
            run.kill()
        raise
    finally:
        holder.close()  # leaves the group
    t0 = time.monotonic()
    await_cond("/readyz 200 once the group assigned the partitions",
               lambda: get(run.port, "/readyz")[0] == 200, 40)
    print("# ready %.1fs after the other member left" %
          (time.monotonic() - t0))
    return run


def check_stop(s, run):
    """SIGTERM while a handler runs: /readyz 503 at once, /healthz 200
    while the stop is bounded, then exit 0 and nothing listens."""
    kcat(s.broker.bootstrap, ["-P", "-t", s.broker.name("orders"), "-K", ":"],
         stdin=b"slow:5\n")
    await_cond("the slow handler started",
               lambda: os.path.exists(s.log + ".slow"), 20)
    run.proc.send_signal(signal.SIGTERM)
    st, body, _ = await_cond(
        "/readyz answers 503 after SIGTERM",
        lambda: (lambda r: r if r[0] == 503 else None)(
            get(run.port, "/readyz")), 5)
    check(run.proc.poll() is None, "... while the message is in flight")
    st, _, _ = get(run.port, "/healthz")
    check(st == 200, "/healthz 200 while stopping (%s)" % st)
    rc = run.proc.wait(timeout=30)
    check(rc == 0, "SIGTERM with --metrics: exit 0 (got %d)" % rc)
    check(get(run.port, "/healthz")[0] is None, "the port is closed")


def main():
    topics = chain("orders", 2, 1)
    topics.update(chain("solo", 1, 1))
    s = Setup(__doc__, HANDLER, topics)
    if s.status is not None:
        return s.status
    run = None
    try:
        run = check_start(s)
        check_metrics(run.port, s.broker.name("orders"))
        check_follows(s, run.port)
        check_http(s, run.port)
        check_idle(s)
        check_stall(s)
        check_stop(s, run)
        s.broker.check_stop()
    except Exception as e:
        print("FAIL:", e)
        if run:
            print("--- kretry run stderr (tail) ---\n" + run.stderr()[-4000:])
        return 1
    finally:
        if run:
            s.cleanup(run.proc)
            run.kill()
        else:
            s.cleanup(None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
