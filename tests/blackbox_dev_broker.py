#!/usr/bin/python3
"""Black-box test of `kretry dev-broker`: independent Kafka clients (kcat,
built on librdkafka, and kafka-python, a separate implementation of the
protocol) produce to and consume from it, kafka-python also through a
consumer group; then SIGTERM must stop it with exit status 0.

usage: blackbox_dev_broker.py PATH/TO/kretry
Exit 0 on success, 1 on failure, 77 (skipped) when kcat or kafka-python is
missing, or when KRETRY_TEST_BOOTSTRAP names a real cluster (this tests the
mock itself). Every step is bounded by a timeout.
"""
import logging
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import SKIP, Broker, check, kcat, mock_only  # noqa: E402

TOPIC = "t"
PARTITIONS = 3


def skip_if_missing():
    if not shutil.which("kcat"):
        print("SKIP: kcat is not installed (Debian package kcat)")
        sys.exit(SKIP)
    try:
        import kafka  # noqa: F401
    except ImportError:
        print("SKIP: kafka-python is not installed (Debian package "
              "python3-kafka)")
        sys.exit(SKIP)


def step_kcat(b):
    meta = kcat(b, ["-L", "-t", TOPIC])
    check('topic "%s" with %d partitions' % (TOPIC, PARTITIONS) in meta,
          "kcat sees topic %s with %d partitions" % (TOPIC, PARTITIONS))
    kcat(b, ["-P", "-t", TOPIC, "-p", "0", "-K", ":"],
         stdin=b"k1:from-kcat-1\nk2:from-kcat-2\n")
    out = kcat(b, ["-C", "-t", TOPIC, "-p", "0", "-o", "beginning", "-e",
                   "-f", "%k=%s\\n"])
    check(out.splitlines() == ["k1=from-kcat-1", "k2=from-kcat-2"],
          "kcat reads back what kcat produced, keys and order kept")


def py_messages():
    return {(b"py-%d" % i, b"value-%d" % i, i % PARTITIONS) for i in range(6)}


def step_python_produce(b):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=b, request_timeout_ms=5000,
                      max_block_ms=5000, linger_ms=0)
    print("# kafka-python inferred broker version", p.config["api_version"])
    for key, value, part in sorted(py_messages()):
        md = p.send(TOPIC, key=key, value=value, partition=part).get(
            timeout=10)
        check(md.partition == part, "kafka-python produced %s to %s[%d]" %
              (key.decode(), TOPIC, part))
    p.close(timeout=5)


def expected_all():
    exp = {(m[0], m[1], m[2]) for m in py_messages()}
    exp |= {(b"k1", b"from-kcat-1", 0), (b"k2", b"from-kcat-2", 0)}
    return exp


def drain(consumer, want, timeout):
    seen = set()
    deadline = time.monotonic() + timeout
    while len(seen) < want and time.monotonic() < deadline:
        for recs in consumer.poll(timeout_ms=200).values():
            seen |= {(r.key, r.value, r.partition) for r in recs}
    return seen


def step_python_assigned(b):
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=b, auto_offset_reset="earliest",
                      enable_auto_commit=False, request_timeout_ms=11000,
                      fetch_max_wait_ms=10)
    c.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    seen = drain(c, len(expected_all()), 10)
    c.close()
    check(seen == expected_all(),
          "kafka-python (assigned partitions) reads everything, kcat's too")


def step_kcat_reads_python(b):
    out = kcat(b, ["-C", "-t", TOPIC, "-o", "beginning", "-e",
                   "-f", "%k=%s@%p\\n"])
    got = set(out.splitlines())
    want = {"%s=%s@%d" % (k.decode(), v.decode(), p)
            for k, v, p in expected_all()}
    check(got == want, "kcat reads every partition, kafka-python's too")


def step_python_group(b):
    from kafka import KafkaConsumer, TopicPartition
    group = "blackbox-%d" % os.getpid()
    c = KafkaConsumer(TOPIC, bootstrap_servers=b, group_id=group,
                      auto_offset_reset="earliest", enable_auto_commit=False,
                      session_timeout_ms=6000, heartbeat_interval_ms=500,
                      request_timeout_ms=11000, fetch_max_wait_ms=10)
    t0 = time.monotonic()
    seen = drain(c, len(expected_all()), 12)
    check(seen == expected_all(),
          "kafka-python consumer group %s joins and reads everything "
          "(%.1fs, the mock delays a group's first join 3s)" %
          (group, time.monotonic() - t0))
    check(len(c.assignment()) == PARTITIONS,
          "the group assigned all %d partitions" % PARTITIONS)
    c.commit()
    c.close()
    # A fresh member of the group reads the commits back (OffsetFetch).
    c = KafkaConsumer(bootstrap_servers=b, group_id=group,
                      enable_auto_commit=False, request_timeout_ms=11000)
    ends = {p: sum(1 for m in expected_all() if m[2] == p)
            for p in range(PARTITIONS)}
    got = {p: c.committed(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)}
    c.close()
    check(got == ends, "the group's committed offsets are the end offsets "
          "%s" % ends)


def step_sigint_and_usage(cli):
    broker = Broker(cli, ["--brokers", "2"])
    try:
        check(len(broker.bootstrap.split(",")) == 2, "--brokers 2: two "
              "addresses in the bootstrap line")
        check(broker.stop(signal.SIGINT) == 0, "SIGINT stops it with exit 0")
    finally:
        broker.kill()
    r = subprocess.run([cli, "dev-broker", "--topic", "bad name"],
                       capture_output=True, timeout=10)
    check(r.returncode == 64 and b"topic name" in r.stderr,
          "a bad --topic is a usage error (64) that says why")


def step_topology(cli):
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(src, "topology", "examples", "minimal.yaml")
    broker = Broker(cli, ["--topology", path, "--topic", "orders:2"])
    try:
        meta = kcat(broker.bootstrap, ["-L"])
        want = ['topic "orders" with 2 partitions'] + [
            'topic "%s" with 4 partitions' % t for t in
            ("orders.retry.1", "orders.retry.2", "orders.retry.3",
             "orders.dlq")]
        check(all(w in meta for w in want), "--topology creates the source, "
              "every tier and the DLQ; --topic overrides a partition count")
        check(broker.stop() == 0, "and stops with exit 0")
    finally:
        broker.kill()
    r = subprocess.run([cli, "dev-broker", "--topology", path + ".missing"],
                       capture_output=True, timeout=10)
    check(r.returncode == 1 and b"cannot open" in r.stderr,
          "an unreadable topology file fails with exit 1 and says why")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    mock_only("blackbox_dev_broker", "it tests `kretry dev-broker` itself",
              "nothing replaces it: the real broker is what dev-broker "
              "imitates, and every other black-box suite runs against it")
    skip_if_missing()
    # kafka-python logs a cancelled fetch on close; only real errors matter.
    logging.basicConfig(level=logging.CRITICAL)
    t0 = time.monotonic()
    broker = Broker(sys.argv[1], ["--topic", "%s:%d" % (TOPIC, PARTITIONS)])
    try:
        b = broker.bootstrap
        check(b.startswith("127.0.0.1:"), "bootstrap line %s" % b)
        step_kcat(b)
        step_python_produce(b)
        step_python_assigned(b)
        step_kcat_reads_python(b)
        step_python_group(b)
        rc = broker.stop(signal.SIGTERM)
        check(rc == 0, "SIGTERM stops dev-broker with exit 0 (got %d)" % rc)
        step_sigint_and_usage(sys.argv[1])
        step_topology(sys.argv[1])
    except Exception as e:  # report, with the broker's own words
        print("FAIL:", e)
        print("--- dev-broker stderr ---\n" + broker.stderr_text())
        return 1
    finally:
        broker.kill()
    print("# blackbox_dev_broker: %.1fs" % (time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
