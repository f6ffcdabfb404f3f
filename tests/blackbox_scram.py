#!/usr/bin/python3
"""Black-box test of kretry on a SCRAM-secured listener of real Kafka (the
one `scripts/kafka.sh start --scram` opens, in KRETRY_TEST_SCRAM_BOOTSTRAP:
SASL_PLAINTEXT, user kretry, password kretry-secret; the mock cluster has
no SASL: 77 without it).

For SCRAM-SHA-256 and SCRAM-SHA-512 in turn, a topology file whose kafka:
section carries the credentials: `kretry topology apply` creates the
chain, kafka-python (its own SCRAM, an independent client) produces
messages over the same listener, and `kretry run --topology` handles every
one of them (one poison message into the DLQ, read back with `kretry dlq
inspect`). The same file with a wrong password: `kretry topology apply`
fails and says the cluster refused the credentials. librdkafka below 2.6.1
cannot log in this way to Kafka 4 (its SCRAM nonce is refused).

usage: blackbox_scram.py PATH/TO/kretry
Exit 0 on success, 1 on failure, 77 (skipped) without a SCRAM listener.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import check, group_x, producer, run, send_all  # noqa: E402

ENV = "KRETRY_TEST_SCRAM_BOOTSTRAP"
USER = "kretry"
PASSWORD = "kretry-secret"
MESSAGES = 20

TOPOLOGY = """\
kafka:
  bootstrap.servers: ${SCRAM_BOOTSTRAP}
  security.protocol: SASL_PLAINTEXT
  sasl.mechanism: ${SCRAM_MECHANISM}
  sasl.username: ${SCRAM_USER}
  sasl.password: ${SCRAM_PASSWORD}
topologies:
  - source: %(source)s
    group: %(source)s-service
    retry:
      tiers: [100ms]
      max_attempts: 2
      jitter: 0%%
"""

HANDLER = 'v=$(cat); echo "$v" >> "$LOG"; [ "$v" = poison ] && exit 2; exit 0'


def produce(bootstrap, mechanism, topic):
    # The first send creates the topic: until its partitions have leaders
    # the broker answers LEADER_NOT_AVAILABLE (bbkafka.producer retries).
    p = producer(bootstrap_servers=bootstrap,
                 security_protocol="SASL_PLAINTEXT",
                 sasl_mechanism=mechanism, sasl_plain_username=USER,
                 sasl_plain_password=PASSWORD)
    send_all(p, topic, [dict(key=b"k%d" % i, value=b"m%d" % i)
                        for i in range(MESSAGES)] +
             [dict(key=b"kp", value=b"poison")])
    p.close()


def end_offsets(bootstrap, mechanism, topic):
    """{partition: end offset} of @topic, or the error reading it."""
    from kafka import KafkaConsumer, TopicPartition
    try:
        c = KafkaConsumer(bootstrap_servers=bootstrap,
                          security_protocol="SASL_PLAINTEXT",
                          sasl_mechanism=mechanism, sasl_plain_username=USER,
                          sasl_plain_password=PASSWORD)
        tps = [TopicPartition(topic, p)
               for p in sorted(c.partitions_for_topic(topic) or [])]
        ends = {tp.partition: o for tp, o in c.end_offsets(tps).items()}
        c.close()
        return ends
    except Exception as e:  # noqa: BLE001 (a diagnostic only)
        return repr(e)


def handled(log):
    if not os.path.exists(log):
        return set()
    with open(log) as f:
        return set(f.read().split())


def dead_letters(cli, path, env):
    r = subprocess.run([cli, "dlq", "inspect", "--topology", path,
                        "--output", "json"], env=env, capture_output=True,
                       timeout=60)
    if r.returncode:
        return None
    return [json.loads(l) for l in r.stdout.decode().splitlines() if l.strip()]


def one_mechanism(cli, bootstrap, mechanism, tmp):
    source = "scram-%s-%d-%d" % (mechanism[-3:], os.getpid(),
                                 int(time.time() * 1000) % 100000000)
    path = os.path.join(tmp, "%s.yaml" % mechanism)
    with open(path, "w") as f:
        f.write(TOPOLOGY % {"source": source})
    log = os.path.join(tmp, "%s.log" % mechanism)
    env = dict(os.environ, SCRAM_BOOTSTRAP=bootstrap,
               SCRAM_MECHANISM=mechanism, SCRAM_USER=USER,
               SCRAM_PASSWORD=PASSWORD, LOG=log)

    # The source first (kafka-python's producer makes it, with the
    # broker's default partitions, 4 here), then the chain beside it.
    produce(bootstrap, mechanism, source)
    r = subprocess.run([cli, "topology", "apply", path, "--yes"], env=env,
                       capture_output=True, timeout=120)
    check(r.returncode == 0, "%s: topology apply logs in and creates the "
          "chain (exit %d: %s)" % (mechanism, r.returncode,
                                   r.stderr.decode().strip()[-300:]))

    err_path = os.path.join(tmp, "%s.err" % mechanism)
    err = open(err_path, "wb")
    run = subprocess.Popen([cli, "run", "--topology", path, *group_x(),
                            "--verbose", "--exec", HANDLER], env=env,
                           stderr=err)
    try:
        want = {"m%d" % i for i in range(MESSAGES)} | {"poison"}
        # Long enough for a join under the consumer group protocol on a
        # loaded machine; what kretry said is shown if it is not enough.
        deadline = time.monotonic() + 180
        dlq = []
        while time.monotonic() < deadline:
            if handled(log) >= want:
                dlq = dead_letters(cli, path, env) or []
                if dlq:
                    break
            time.sleep(0.2)
        if not handled(log) >= want:
            with open(err_path, errors="replace") as f:
                said = [l for l in f.read().splitlines()
                        if "REBALANCE" in l or "WARNING" in l or
                        "ERROR" in l]
            print("# kretry run said (assignments, warnings, errors):\n# " +
                  "\n# ".join(said[-40:]))
            print("# the source holds: %s" % end_offsets(bootstrap,
                                                         mechanism, source))
        check(handled(log) >= want, "%s: kretry run handled all %d "
              "messages (%d; missing %s)"
              % (mechanism, len(want), len(handled(log) & want),
                 sorted(want - handled(log))))
        check([d.get("key") for d in dlq] == ["kp"],
              "%s: the poison message is the one dead letter, read back "
              "with dlq inspect (%s)" % (mechanism, dlq))
    finally:
        run.send_signal(signal.SIGTERM)
        rc = run.wait(timeout=60)
        err.close()
    check(rc == 0, "%s: one SIGTERM, exit 0 (%d)" % (mechanism, rc))

    bad = dict(env, SCRAM_PASSWORD="not-" + PASSWORD)
    r = subprocess.run([cli, "topology", "apply", path, "--yes"], env=bad,
                       capture_output=True, timeout=120)
    said = r.stderr.decode()
    check(r.returncode != 0 and "refused the credentials" in said and
          mechanism in said,
          "%s: a wrong password fails and says so (exit %d: %s)"
          % (mechanism, r.returncode, said.strip()[-300:]))


def main():
    bootstrap = os.environ.get(ENV)
    if not bootstrap:
        print("SKIPPED: blackbox_scram needs a SCRAM listener of a real "
              "cluster in %s (scripts/kafka.sh start --scram; the mock "
              "cluster has no SASL)" % ENV)
        return 77
    try:
        import kafka  # noqa: F401
    except ImportError:
        print("SKIPPED: kafka-python is not installed (Debian package "
              "python3-kafka)")
        return 77
    cli = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            one_mechanism(cli, bootstrap, mechanism, tmp)
    return 0


if __name__ == "__main__":
    run(main)
