#!/usr/bin/python3
"""Black-box test of a permission lost while kretry runs, on the secured
cluster of scripts/test.sh's secured pass (scripts/kafka.sh start
--secure: TLS, SASL, ACLs with allow.everyone.if.no.acl.found=false).

kretry runs as the service user (KRETRY_TEST_SERVICE_PROPS), the test as
admin (KRETRY_TEST_KAFKA_PROPS). Once kretry handles messages, the admin
denies the service Write on the DLQ (a DENY ACL, which overrides the
service's prefixed grants) and a poison message arrives. Then:
- /readyz answers 503, saying why, within 5 s of the refusal;
- /metrics counts the refusal (kretry_denied_total{cause="copy"});
- the log says it once as an ERROR (DENIED), not a WARNING per try;
- one SIGTERM ends kretry within 5 s, although revoke.timeout.ms is 30 s:
  no copy in flight can succeed;
- the poison message's offset is not committed (nothing lost): with the
  ACL granted again, a second run dead-letters it.

usage: blackbox_secure_revoked.py PATH/TO/kretry
Exit 0 on success, 1 on failure, 77 (skipped) outside the secured pass.
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import (check, kafka_kwargs, producer, props, run,  # noqa: E402
                     send_all)

HANDLER = 'v=$(cat); echo "$v" >> "$LOG"; [ "$v" = poison ] && exit 2; exit 0'


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


def topology(bootstrap, source, service):
    lines = ["kafka:", "  bootstrap.servers: \"%s\"" % bootstrap]
    lines += ["  %s: \"%s\"" % (k, v) for k, v in service]
    lines += ["topologies:", "  - source: %s" % source,
              "    group: %s-service" % source,
              "    retry:", "      tiers: [100ms]", "      max_attempts: 2",
              "      jitter: 0%"]
    return "\n".join(lines) + "\n"


def principal(service):
    return "User:" + dict(service)["sasl.username"]


def deny_write(admin, user, topic, on):
    from kafka.admin import (ACL, ACLFilter, ACLOperation,
                             ACLPermissionType, ResourcePattern,
                             ResourcePatternFilter, ResourceType)
    from kafka.admin.acl_resource import ACLResourcePatternType
    pattern = ResourcePattern(ResourceType.TOPIC, topic,
                              ACLResourcePatternType.LITERAL)
    acl = ACL(user, "*", ACLOperation.WRITE, ACLPermissionType.DENY, pattern)
    if on:
        r = admin.create_acls([acl])
        check(not r["failed"], "the admin denies %s Write on %s (%s)"
              % (user, topic, r["failed"]))
    else:
        f = ACLFilter(user, "*", ACLOperation.WRITE, ACLPermissionType.DENY,
                      ResourcePatternFilter(ResourceType.TOPIC, topic,
                                            ACLResourcePatternType.LITERAL))
        admin.delete_acls([f])


def committed(consumer_kw, group, topic):
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(group_id=group, enable_auto_commit=False,
                      **consumer_kw)
    try:
        tps = [TopicPartition(topic, p) for p in
               sorted(c.partitions_for_topic(topic) or [])]
        return sum(max(c.committed(tp) or 0, 0) for tp in tps)
    finally:
        c.close()


def wait(cond, timeout, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


def handled(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return f.read().split()


def run_kretry(cli, path, env, port, err):
    return subprocess.Popen([cli, "run", "--topology", path, "--exec",
                             HANDLER, "--metrics", str(port)], env=env,
                            stderr=err)


def main():
    service = props("KRETRY_TEST_SERVICE_PROPS")
    bootstrap = os.environ.get("KRETRY_TEST_BOOTSTRAP")
    if not service or not props("KRETRY_TEST_KAFKA_PROPS") or not bootstrap:
        print("SKIPPED: blackbox_secure_revoked needs the secured cluster "
              "(scripts/test.sh's secured pass: KRETRY_TEST_BOOTSTRAP, "
              "KRETRY_TEST_KAFKA_PROPS, KRETRY_TEST_SERVICE_PROPS)")
        return 77
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    cli = sys.argv[1]
    kw = dict(kafka_kwargs(), bootstrap_servers=bootstrap)
    prefix = os.environ.get("KRETRY_TEST_NAME_PREFIX", "")
    source = "%srevoked-%d-%d" % (prefix, os.getpid(),
                                  int(time.time() * 1000) % 100000000)
    dlq = source + ".dlq"
    admin = KafkaAdminClient(**kw)
    admin.create_topics([NewTopic(t, 2, 1) for t in
                         (source, source + ".retry.1", dlq)])
    names = [source, source + ".retry.1", dlq]

    def listed():
        try:
            ts = admin.describe_topics(names)
        except Exception:  # not yet known to the broker that answers
            return False
        return all(t.get("error_code") == 0 and len(t["partitions"]) == 2
                   for t in ts)
    check(wait(listed, 30, 0.2), "the chain's topics are listed")
    user = principal(service)
    p = producer(**kw)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "topology.yaml")
        with open(path, "w") as f:
            f.write(topology(bootstrap, source, service))
        log = os.path.join(tmp, "handled.log")
        env = dict(os.environ, LOG=log)
        port = free_port()
        errpath = os.path.join(tmp, "run.err")
        err = open(errpath, "wb")
        run = run_kretry(cli, path, env, port, err)
        denied = False
        try:
            url = "http://127.0.0.1:%d" % port
            at = send_all(p, source, [dict(key=b"k%d" % i, value=b"m%d" % i)
                           for i in range(4)])
            check(wait(lambda: len(handled(log)) >= 4, 60),
                  "kretry run as %s handles 4 messages, written at %s "
                  "(%s; %s)"
                  % (user, at, handled(log),
                     open(errpath, errors="replace").read()[-1500:]))
            check(wait(lambda: get(url + "/readyz")[0] == 200, 30),
                  "/readyz answers 200 (%s)" % (get(url + "/readyz"),))

            deny_write(admin, user, dlq, True)
            denied = True
            send_all(p, source, [dict(key=b"kp", value=b"poison",
                                      partition=0)])
            check(wait(lambda: "poison" in handled(log), 30),
                  "the poison message is handled")
            t0 = time.monotonic()
            status = wait(lambda: get(url + "/readyz")[0] == 503, 5)
            st = get(url + "/readyz")
            check(status and "not authorized" in st[1],
                  "/readyz answers 503 within 5 s of the refusal, saying "
                  "why (%s after %.1f s)" % (st, time.monotonic() - t0))
            def denied_total():
                m = get(url + "/metrics")[1]
                line = [l for l in m.splitlines()
                        if l.startswith('kretry_denied_total{cause="copy"}')]
                return line and int(line[0].split()[-1]) >= 1 and line
            # Rendered every stats.interval.ms (1 s).
            check(wait(denied_total, 5),
                  "/metrics counts the refusal (%s)" % denied_total())
            # Tried again meanwhile (50, 100, 200, 400, 800 ms...): said once.
            time.sleep(2)
        finally:
            t0 = time.monotonic()
            run.send_signal(signal.SIGTERM)
            try:
                rc = run.wait(timeout=60)
            except subprocess.TimeoutExpired:
                run.kill()
                rc = run.wait()
            took = time.monotonic() - t0
            err.close()
        said = open(errpath, errors="replace").read()
        check(took < 5, "one SIGTERM ends kretry within 5 s with the copy "
              "refused (%.1f s, exit %d; revoke.timeout.ms 30 s)"
              % (took, rc))
        errors = [l for l in said.splitlines() if "DENIED" in l]
        check(len(errors) == 1 and dlq in errors[0],
              "one DENIED error naming the DLQ, not one a try (%s)"
              % errors)
        check("Topic authorization failed" not in "\n".join(
            l for l in said.splitlines() if "WARNING" in l),
              "no WARNING a try for the refused copy")
        group = source + "-service"
        done = committed(kw, group, source)
        check(done == 4, "the poison message's offset is not committed "
              "(%d committed of 5)" % done)

        # Granted again: a second run dead-letters it, nothing lost.
        deny_write(admin, user, dlq, False)
        denied = False
        err = open(errpath, "wb")
        run = run_kretry(cli, path, env, free_port(), err)
        try:
            check(wait(lambda: committed(kw, group, source) == 5, 60, 0.5),
                  "with Write granted again the poison message is "
                  "dead-lettered and committed")
        finally:
            run.send_signal(signal.SIGTERM)
            run.wait(timeout=60)
            err.close()
            if denied:
                deny_write(admin, user, dlq, False)
            p.close()
            admin.delete_topics([source, source + ".retry.1", dlq])
            admin.close()
    return 0


if __name__ == "__main__":
    run(main)
