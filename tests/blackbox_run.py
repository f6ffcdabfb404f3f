#!/usr/bin/python3
"""Black-box test of `kretry run` on `kretry dev-broker` (or the real
cluster in KRETRY_TEST_BOOTSTRAP, bbkafka.py): a shell handler
answers through its exit status; kcat produces the input and reads the
dead-letter topic back. A key with a NUL byte is produced with kafka-python
when it is installed.

usage: blackbox_run.py PATH/TO/kretry
Exit 0 on success, 1 on failure, 77 (skipped) when kcat is missing.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import (SKIP, Cluster, chain, check, file_text, group_x,  # noqa: E402
                     kcat)

# Decides by key: ok, a retry that succeeds on attempt 3, a permanent
# failure, one that always retries (exhausted), a crash, and a null key.
HANDLER = r"""
v=$(cat)
echo "key=${KRETRY_KEY-<unset>} hex=${KRETRY_KEY_HEX-<unset>} \
attempt=$KRETRY_ATTEMPT tier=$KRETRY_TIER topic=$KRETRY_TOPIC \
vnull=${KRETRY_VALUE_NULL-0} value=$v" >> "$LOG"
case "$KRETRY_KEY_HEX" in
6f6b) exit 0 ;;                                    # ok
7265747279) [ "$KRETRY_ATTEMPT" -ge 3 ] && exit 0
            echo "busy, attempt $KRETRY_ATTEMPT" >&2; exit 75 ;;  # retry
6661696c) echo "first line" >&2; echo "bad input: $v" >&2; exit 3 ;;
616c77617973) echo "still down" >&2; exit 75 ;;    # always
736967) kill -KILL $$ ;;                           # sig
'') exit 0 ;;                                      # null key
610062) exit 0 ;;                                  # a NUL b
6e756c6c76616c7565) exit 0 ;;                      # nullvalue
esac
exit 99
"""

MOCK_X = ["-X", "socket.nagle.disable=true",
          "-X", "consumer.fetch.wait.max.ms=10"] + \
    group_x("consumer.session.timeout.ms=6000",
            "consumer.heartbeat.interval.ms=500")


def produce_input(k):
    b = k.bootstrap
    kcat(b, ["-P", "-t", k.name("orders"), "-p", "0", "-K", ":", "-Z"],
         stdin=b"ok:hello\nretry:again\nfail:bad\nalways:x\nsig:y\n"
               b"no-key-line\nnullvalue:\n")
    try:
        from kafka import KafkaProducer
    except ImportError:
        print("# kafka-python missing: NUL-byte key not tried")
        return False
    p = KafkaProducer(bootstrap_servers=b, max_block_ms=5000)
    p.send(k.name("orders"), key=b"a\x00b", value=b"nul-key",
           partition=1).get(timeout=10)
    p.close(timeout=5)
    return True


def wait_for(path, want, timeout):
    """Wait until the handler log has at least @want lines."""
    deadline = time.monotonic() + timeout
    lines = []
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                lines = f.read().splitlines()
            if len(lines) >= want:
                break
        time.sleep(0.1)
    return lines


def check_calls(k, lines, nul_key):
    def calls(key):
        return [l for l in lines if l.startswith("key=%s " % key)]
    check(len(calls("ok")) == 1, "ok: handled once")
    r = calls("retry")
    check([l.split()[2] for l in r] ==
          ["attempt=1", "attempt=2", "attempt=3"] and "tier=2" in r[2] and
          "topic=%s " % k.name("orders.retry.2") in r[2],
          "exit 75 retries through tier 1 then 2, OK on attempt 3")
    check(len(calls("always")) == 3, "always 75: 3 attempts (max) in all")
    check(len(calls("fail")) == 1 and len(calls("sig")) == 1,
          "a failure or a crash is not retried")
    nk = [l for l in lines if "hex=<unset>" in l]
    check(len(nk) == 1 and nk[0].startswith("key=<unset> ") and
          "value=no-key-line" in nk[0],
          "a null key leaves KRETRY_KEY and KRETRY_KEY_HEX unset")
    nv = calls("nullvalue")
    check(len(nv) == 1 and "vnull=1" in nv[0], "a null value sets "
          "KRETRY_VALUE_NULL=1")
    if nul_key:
        nul = [l for l in lines if "hex=610062" in l]
        check(len(nul) == 1 and nul[0].startswith("key=<unset>"),
              "a key with a NUL byte: KRETRY_KEY unset, KRETRY_KEY_HEX whole")


def read_dlq(k, want, timeout):
    """The DLQ by key, once @want copies are there (or at the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        out = kcat(k.bootstrap, ["-C", "-t", k.name("orders.dlq"), "-o",
                                 "beginning", "-e", "-f", "%k|%s|%h\\n"])
        dlq = {l.split("|")[0]: l for l in out.splitlines() if "|" in l}
        if len(dlq) >= want or time.monotonic() > deadline:
            return dlq
        time.sleep(0.2)


def check_dlq(k):
    dlq = read_dlq(k, 3, 10)
    check(sorted(dlq) == ["always", "fail", "sig"],
          "the DLQ holds exactly fail, always and sig (%s)" % sorted(dlq))
    check("kretry-error-code=EXIT_3" in dlq["fail"] and
          "kretry-error=bad input: bad" in dlq["fail"] and
          "kretry-error-class=permanent" in dlq["fail"],
          "exit 3: permanent, code EXIT_3, last stderr line as the error")
    check("kretry-error-class=exhausted" in dlq["always"] and
          "kretry-error=still down" in dlq["always"],
          "exit 75 every time: exhausted, with the handler's message")
    check("kretry-error-code=SIGNAL_9" in dlq["sig"],
          "killed by SIGKILL: code SIGNAL_9")


class Setup:
    """What a `kretry run` black-box test starts with: the kretry path from
    the command line, @handler_text written as handler.sh beside the log
    file $LOG it may append to, and a cluster (bbkafka.Cluster) with
    @topics ({name: partitions}) as `broker`. `status` is not None when the
    test must end at once with it (usage, skip)."""

    def __init__(self, doc, handler_text, topics):
        self.status = None
        if len(sys.argv) != 2:
            print(doc)
            self.status = 2
            return
        if not shutil.which("kcat"):
            print("SKIP: kcat is not installed (Debian package kcat)")
            self.status = SKIP
            return
        self.cli = sys.argv[1]
        self.tmp = tempfile.TemporaryDirectory()
        self.log = os.path.join(self.tmp.name, "calls.log")
        self.handler = os.path.join(self.tmp.name, "handler.sh")
        with open(self.handler, "w") as f:
            f.write(handler_text)
        self.broker = Cluster(topics).start(self.cli)
        self.run_err = tempfile.TemporaryFile()

    def cleanup(self, run):
        """Kill what is still running: kretry run (@run, may be None) and
        the broker (or delete the topics from the real cluster)."""
        if run and run.poll() is None:
            run.kill()
            run.wait(timeout=10)
        self.broker.kill()

    def run_stderr(self):
        return file_text(self.run_err)


def main():
    t0 = time.monotonic()
    s = Setup(__doc__, HANDLER, chain("orders", 2, 2))
    if s.status is not None:
        return s.status
    cli, log, handler, broker, run_err = (s.cli, s.log, s.handler, s.broker,
                                          s.run_err)
    run = None
    try:
        b = broker.bootstrap
        nul_key = produce_input(broker)
        run = subprocess.Popen(
            [cli, "run", "--bootstrap", b, "--source", broker.name("orders"),
             "--group", broker.group("bb-run"), "--tiers", "200ms,400ms",
             "--max-attempts", "3", "--jitter", "0", "--verbose"] +
            MOCK_X + ["--exec", "exec sh " + handler],
            env=dict(os.environ, LOG=log), stderr=run_err)
        # 1 ok + 3 retry + 1 fail + 3 always + 1 sig + null key + null value
        # ("exec": a shell that waits would report a killed handler as
        # exit 137, not as signal 9)
        want = 11 + (1 if nul_key else 0)
        lines = wait_for(log, want, 20)
        check(len(lines) >= want, "%d handler calls (want %d)" %
              (len(lines), want))
        check_calls(broker, lines, nul_key)
        check_dlq(broker)
        run.send_signal(signal.SIGTERM)
        rc = run.wait(timeout=15)
        check(rc == 0, "SIGTERM stops kretry run with exit 0 (got %d)" % rc)
        check("%s[0]@2 attempt 1 -> dlq (permanent)" % broker.name("orders")
              in s.run_stderr(),
              "--verbose prints one line per routed message")
        broker.check_stop()
    except Exception as e:
        print("FAIL:", e)
        print("--- kretry run stderr ---\n" + s.run_stderr())
        print("--- dev-broker stderr ---\n" + broker.stderr_text())
        return 1
    finally:
        s.cleanup(run)
    print("# blackbox_run: %.1fs" % (time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
