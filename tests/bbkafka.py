"""The broker the black-box tests run against, and what they share to talk
to it.

By default every test starts its own `kretry dev-broker` (librdkafka's mock
cluster in a child process) with fixed topic names. With
KRETRY_TEST_BOOTSTRAP=HOST:PORT set, no dev-broker is started: the topics a
test needs are created on that real cluster through the admin API
(kafka-python) under unique names, "orders-<pid>-<ms>-<n>" with its
".retry.N" tiers and ".dlq", waited for until the cluster's metadata lists
them with a leader for every partition, and deleted when the test ends.
Consumer groups get the same unique suffix there, and both start with
KRETRY_TEST_NAME_PREFIX if set (for prefixed ACLs). A test names topics and
groups by their fixed (logical) names and asks Cluster.name / .group for
the ones to use: on dev-broker they are the same.

Tests that only the mock can run call mock_only(): on a real cluster they
exit 77 with a line starting "SKIPPED:" that says why.

On a secured cluster (scripts/test.sh's secured pass) two files of
librdkafka properties, one `key=value` a line, say who logs in:
KRETRY_TEST_KAFKA_PROPS the test's own side (topics created, input
produced, copies read: kcat, through KCAT_X, and kafka-python, through
kafka_kwargs()), KRETRY_TEST_SERVICE_PROPS the kretry under test (its -X
options, service_x(), or its topology file's kafka: section,
service_yaml()), so that kretry runs with only the ACLs a service gets.
"""
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
ENV = "KRETRY_TEST_BOOTSTRAP"
KAFKA_PROPS = "KRETRY_TEST_KAFKA_PROPS"
SERVICE_PROPS = "KRETRY_TEST_SERVICE_PROPS"


def props(env):
    """The properties of the file the environment variable @env names, in
    order ([] when unset): [(key, value), ...]."""
    path = os.environ.get(env)
    if not path:
        return []
    out = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\r\n")
            if not line or line.startswith("#"):
                continue
            if "=" not in line:
                raise AssertionError("%s=%s: not key=value: %r"
                                     % (env, path, line))
            out.append(tuple(line.split("=", 1)))
    return out


def kafka_kwargs():
    """kafka-python's arguments for the test's own login
    (KRETRY_TEST_KAFKA_PROPS; {} without). On a SASL listener kafka-python
    is given the protocol version, or its producer may wait on metadata."""
    p = dict(props(KAFKA_PROPS))
    if not p:
        return {}
    names = {"security.protocol": "security_protocol",
             "sasl.mechanism": "sasl_mechanism",
             "sasl.username": "sasl_plain_username",
             "sasl.password": "sasl_plain_password",
             "ssl.ca.location": "ssl_cafile",
             "ssl.certificate.location": "ssl_certfile",
             "ssl.key.location": "ssl_keyfile"}
    unknown = sorted(set(p) - set(names))
    if unknown:
        raise AssertionError("%s: no kafka-python argument for %s"
                             % (KAFKA_PROPS, unknown))
    kw = {names[k]: v for k, v in p.items()}
    kw["api_version"] = (2, 5, 0)
    return kw


def producer(**kw):
    """A kafka-python producer that retries: right after a topic is created,
    or on a loaded broker, a send can be answered NOT_LEADER or
    LEADER_NOT_AVAILABLE, which kafka-python does not retry by default
    (retries=0) and only the send's future reports (send_all reads them)."""
    from kafka import KafkaProducer
    return KafkaProducer(retries=10, retry_backoff_ms=200, **kw)


def send_all(p, topic, sends):
    """Each of @sends (KafkaProducer.send's keyword arguments) to @topic,
    flushed; raises unless every one was written. Returns where each went:
    [(partition, offset), ...]."""
    futures = [p.send(topic, **s) for s in sends]
    p.flush(30)
    return [(m.partition, m.offset) for m in
            (f.get(timeout=30) for f in futures)]


def service_x():
    """`kretry run`'s -X options for the service's login
    (KRETRY_TEST_SERVICE_PROPS)."""
    return [a for k, v in props(SERVICE_PROPS) for a in ("-X", k + "=" + v)]


def service_yaml():
    """The same as lines of a topology file's kafka: section."""
    return "".join('  %s: "%s"\n' % kv for kv in props(SERVICE_PROPS))


# The mock's Nagle stays on; clients turn theirs off (KAFKA-MOCK.md). The
# test's own login, if any, from its properties file (kcat -F).
KCAT_X = ["-X", "socket.nagle.disable=true", "-X", "fetch.wait.max.ms=10"] + \
    (["-F", os.environ[KAFKA_PROPS]] if os.environ.get(KAFKA_PROPS) else [])
# Every test topic on a real cluster takes values up to 8 MiB, as the C
# suites' (tests/testutil.c): above Kafka's default of 1 MiB; a tier or a
# DLQ 128 KiB more for kretry's headers (KRETRY_COPY_HEADROOM, what
# `kretry topology apply` gives them), or kretry run warns at start.
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
COPY_HEADROOM = 128 * 1024


def max_message_bytes(topic):
    copies = ".retry." in topic or topic.endswith(".dlq")
    return MAX_MESSAGE_BYTES + (COPY_HEADROOM if copies else 0)


# The consumer properties of the classic group protocol only: under the
# consumer protocol (KIP-848) the broker sets them (scripts/kafka.sh) and
# librdkafka refuses them.
CLASSIC_ONLY = ("session.timeout.ms", "heartbeat.interval.ms",
                "partition.assignment.strategy")


def group_x(*props):
    """`kretry run`'s -X options for its consumer group: @props
    ("consumer.NAME=VALUE") as given, or, with
    KRETRY_TEST_GROUP_PROTOCOL=consumer (scripts/test.sh's second real
    pass), the consumer group protocol without the classic-only ones."""
    if os.environ.get("KRETRY_TEST_GROUP_PROTOCOL") != "consumer":
        return [a for p in props for a in ("-X", p)]
    x = ["-X", "consumer.group.protocol=consumer"]
    for p in props:
        name = p.split("=", 1)[0]
        if name.split(".", 1)[-1] not in CLASSIC_ONLY:
            x += ["-X", p]
    return x


def real_bootstrap():
    """The real cluster's bootstrap servers, or None (dev-broker)."""
    return os.environ.get(ENV) or None


def mock_only(suite, why, instead):
    """On a real cluster: say why @suite needs the mock cluster and what
    covers the same promise there (@instead), and exit 77."""
    if real_bootstrap():
        print("SKIPPED: %s needs the mock cluster (%s); on real Kafka: %s"
              % (suite, why, instead))
        sys.exit(SKIP)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok -", what)

def wait_for(what, cond, timeout):
    """Poll @cond every 100 ms until it holds ("ok - @what"), or fail when
    @timeout seconds pass first."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out: " + what)
        time.sleep(0.1)
    print("ok -", what)


def run(main):
    """A black-box script's exit: main()'s status, or 1 with "FAIL - ..."
    when a check failed."""
    try:
        sys.exit(main())
    except AssertionError as e:
        print("FAIL -", e)
        sys.exit(1)



def kcat(bootstrap, args, stdin=None, timeout=15):
    r = subprocess.run(["kcat", "-b", bootstrap] + KCAT_X + args,
                       input=stdin, capture_output=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError("kcat %s failed (%d): %s" %
                             (" ".join(args), r.returncode,
                              r.stderr.decode(errors="replace")))
    return r.stdout.decode()


def file_text(f):
    """All of the file @f a child process writes its output to, read with
    pread: a seek and read would move the offset the child shares (it
    inherited the same open file) and make its next write overwrite the
    start."""
    fd = f.fileno()
    return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")


class Broker:
    """`kretry dev-broker` (or another long-running kretry @command whose
    first stdout line says where it is) as a child process; stderr kept in
    a file."""

    def __init__(self, cli, args, command="dev-broker", env=None):
        self.err = tempfile.TemporaryFile()
        self.command = command
        self.proc = subprocess.Popen([cli, command] + args,
                                     stdout=subprocess.PIPE,
                                     stderr=self.err, env=env)
        self.bootstrap = self._first_line(10)

    def _first_line(self, timeout):
        deadline = time.monotonic() + timeout
        buf = b""
        fd = self.proc.stdout.fileno()
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise AssertionError("kretry %s: no first line within %ds"
                                     % (self.command, timeout))
            chunk = os.read(fd, 4096)
            if not chunk:
                raise AssertionError("kretry %s exited before its first "
                                     "line: %s" % (self.command,
                                                   self.stderr_text()))
            buf += chunk
        return buf.split(b"\n", 1)[0].decode()

    def stop(self, sig=signal.SIGTERM, timeout=10):
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)

    def stderr_text(self):
        return file_text(self.err)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def chain(base, partitions, tiers):
    """{topic: partitions} for the source @base, its @tiers tier topics
    and its DLQ, @partitions each (kretry's default names)."""
    names = [base] + ["%s.retry.%d" % (base, n + 1) for n in range(tiers)]
    return {t: partitions for t in names + [base + ".dlq"]}


def dev_broker_args(topics):
    """dev-broker --topic arguments creating @topics ({name: partitions})."""
    args = []
    for name, parts in topics.items():
        args += ["--topic", "%s:%d" % (name, parts)]
    return args


_seq = [0]


class Cluster:
    """The cluster of one test: @topics ({logical name: partitions}) are
    what it needs. Names are fixed at construction (a topology file can be
    written with them); start() starts dev-broker (with @dev_args, by
    default one --topic per topic) or creates the topics on the real
    cluster and waits until its metadata lists them."""

    def __init__(self, topics):
        self.real = real_bootstrap()
        self.topics = dict(topics)
        self.broker = None
        self.bootstrap = self.real
        self.created = []
        _seq[0] += 1
        self.prefix = os.environ.get("KRETRY_TEST_NAME_PREFIX", "") \
            if self.real else ""
        self.suffix = "-%d-%d-%d" % (os.getpid(),
                                     int(time.time() * 1000) % 100000000,
                                     _seq[0]) if self.real else ""

    def name(self, logical):
        """The topic to use for @logical ("orders", "orders.retry.2"): the
        same on dev-broker, the source's unique name and the same tail on a
        real cluster."""
        base, dot, rest = logical.partition(".")
        return self.prefix + base + self.suffix + dot + rest

    def group(self, logical):
        return self.prefix + logical + self.suffix

    def start(self, cli, dev_args=None, timeout=30):
        if not self.real:
            self.broker = Broker(cli, dev_broker_args(self.topics)
                                 if dev_args is None else dev_args)
            self.bootstrap = self.broker.bootstrap
            return self
        try:
            from kafka import KafkaAdminClient
            from kafka.admin import NewTopic
        except ImportError:
            print("SKIPPED: %s=%s: kafka-python creates the topics on a "
                  "real cluster and is not installed (Debian package "
                  "python3-kafka)" % (ENV, self.real))
            sys.exit(SKIP)
        want = {self.name(t): p for t, p in self.topics.items()}
        try:
            admin = KafkaAdminClient(bootstrap_servers=self.real,
                                     request_timeout_ms=timeout * 1000,
                                     **kafka_kwargs())
            try:
                self.created = sorted(want)
                resp = admin.create_topics(
                    [NewTopic(n, p, 1, topic_configs={
                        "max.message.bytes": str(max_message_bytes(n))})
                     for n, p in sorted(want.items())],
                    timeout_ms=timeout * 1000)
                errs = [t for t in resp.topic_errors if t[1]]
                if errs:
                    raise AssertionError("CreateTopics on %s: %s"
                                         % (self.real, errs))
            finally:
                admin.close()
            self._await_metadata(want, timeout)
        except BaseException:
            self._delete()  # the test that would delete them never starts
            raise
        return self

    def _await_metadata(self, want, timeout):
        """Until librdkafka (kcat, as kretry) sees every topic of @want
        with its partition count and a leader for each partition: a topic
        appears in a broker's metadata a moment after CreateTopics."""
        deadline = time.monotonic() + timeout
        missing = sorted(want)
        while True:
            missing = [n for n in missing
                       if not self._listed(n, want[n])]
            if not missing:
                return
            if time.monotonic() > deadline:
                raise AssertionError("%s: topics not in the metadata after "
                                     "%ds: %s" % (self.real, timeout,
                                                  missing))
            time.sleep(0.1)

    def _listed(self, name, parts):
        r = subprocess.run(["kcat", "-b", self.real, "-L", "-t", name] +
                           KCAT_X,
                           capture_output=True, timeout=15)
        if r.returncode != 0:
            return False
        out = r.stdout.decode(errors="replace")
        led = [l for l in out.splitlines()
               if l.strip().startswith("partition ") and
               "leader -1" not in l and "Err" not in l]
        return ('topic "%s" with %d partitions' % (name, parts) in out and
                "error" not in out and len(led) == parts)

    def stop(self):
        """Stops dev-broker (its exit status) or deletes the topics from
        the real cluster (0 when they are gone)."""
        if self.broker:
            return self.broker.stop()
        return 0 if self._delete() else 1

    @property
    def stop_what(self):
        return "dev-broker stops with exit 0" if not self.real else \
            "the run's topics are deleted from %s" % self.real

    def check_stop(self):
        check(self.stop() == 0, self.stop_what)

    def kill(self):
        """What the test leaves: dev-broker killed, or the topics deleted
        (every exit path calls this)."""
        if self.broker:
            self.broker.kill()
        else:
            self._delete()

    def _delete(self):
        if not self.created:
            return True
        from kafka import KafkaAdminClient
        names, self.created = self.created, []
        try:
            admin = KafkaAdminClient(bootstrap_servers=self.real,
                                     **kafka_kwargs())
            try:
                resp = admin.delete_topics(names, timeout_ms=30000)
            finally:
                admin.close()
        except Exception as e:  # noqa: BLE001 - reported, not fatal here
            print("# deleting %s: %s" % (names, e))
            return False
        errs = [t for t in resp.topic_error_codes if t[1]]
        if errs:
            print("# DeleteTopics: %s" % errs)
        return not errs

    def stderr_text(self):
        if self.broker:
            return self.broker.stderr_text()
        return "(real cluster %s: no dev-broker)" % self.real

    def kill_broker(self):
        """Takes the broker down at once: only the mock's can be."""
        assert self.broker, "only dev-broker can be killed by a test"
        self.broker.proc.kill()


DECIDED = "kretry-decided:"


def committed(bootstrap, group, topic, partitions):
    """The group's committed offsets of @topic's @partitions, read from
    outside (kafka-python): {partition: (offset, metadata)}, offset -1 when
    none is committed. The partitions are named: the mock cluster does not
    answer an OffsetFetch for all of a group's partitions."""
    from kafka import KafkaAdminClient, TopicPartition
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, **kafka_kwargs())
    try:
        got = admin.list_consumer_group_offsets(
            group, partitions=[TopicPartition(topic, p) for p in partitions])
    finally:
        admin.close()
    return {p: (got[tp].offset, got[tp].metadata or "") if tp in got
            else (-1, "") for p in partitions
            for tp in [TopicPartition(topic, p)]}


def decided_above(offset, metadata):
    """The offsets a commit at @offset says were decided above it (kretry's
    commit metadata: "kretry-decided:<from>+<count>,...", <from> relative
    to @offset), as a set; empty for other metadata."""
    if not metadata.startswith(DECIDED):
        return set()
    out = set()
    for r in metadata[len(DECIDED):].split(","):
        start, count = (int(x) for x in r.split("+"))
        out |= set(range(offset + start, offset + start + count))
    return out
