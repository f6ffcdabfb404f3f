#!/usr/bin/python3
"""Black-box test: no secret appears in anything kretry prints or serves.

A topology file carries a password, an SSL key password, an OAUTHBEARER
client secret and configuration, and an HTTP handler header; the run takes
another header on the command line and `kretry ui` a token. Every output of
a secured run is captured and searched for each secret: `kretry topology
validate`, `describe` (text and JSON), `apply`, `kretry run --verbose` with
librdkafka's `debug=all` (stdout and stderr) and its `/metrics`, `/healthz`
and `/readyz`, an `--exec` and an `--http` handler (`--http-header`), `dlq
inspect` (text and JSON), `stats` (table, JSON, Prometheus, `--check`),
`dlq replay --dry-run`, `dlq export`, `kretry ui`'s page and API (a wrong
token's refusal included), and `kretry run` refusing `-X
ssl.truststore.password=...`. Two rounds: the password
and the command line's header from files (`${file:PATH}`), then from the
environment (`${VAR}`).

With KRETRY_TEST_SCRAM_BOOTSTRAP (real Kafka's SCRAM listener of
`scripts/kafka.sh start --scram`: user kretry, password kretry-secret)
kretry logs in with SCRAM-SHA-512 with the password it must not show, and
`topology apply` creates the topics. Without it, on `kretry dev-broker`
(no SASL), the same secrets are configured and every printer checked all
the same, the topics made by `dev-broker --topology`; on a real cluster
without the SCRAM listener it skips (77).

usage: blackbox_secrets.py PATH/TO/kretry
"""
import http.server
import json
import os
import re
import secrets as rnd
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import (SKIP, Broker, check, file_text, group_x,  # noqa: E402
                     kcat, producer, real_bootstrap, send_all, wait_for)

SCRAM = os.environ.get("KRETRY_TEST_SCRAM_BOOTSTRAP")
MESSAGES = ["m0", "m1", "m2", "poison"]
HANDLER = 'v=$(cat); echo "$v" >> "$LOG"; [ "$v" = poison ] && exit 2; exit 0'

TOPOLOGY = """\
kafka:
  bootstrap.servers: %(bootstrap)s
%(security)s  sasl.password: %(password_ref)s
  ssl.key.password: ${KRETRY_BB_KEY_PASSWORD}
  sasl.oauthbearer.client.secret: ${KRETRY_BB_OIDC_SECRET}
  sasl.oauthbearer.config: ${KRETRY_BB_OAUTH_CONFIG}
topologies:
  - name: ex
    source: %(ex)s
    group: %(ex)s-service
    retry: { tiers: [100ms], max_attempts: 2, jitter: 0%% }
    topics: { partitions: 2 }
    alerts: { dlq_messages: 1 }
  - name: ht
    source: %(ht)s
    group: %(ht)s-service
    retry: { tiers: [100ms], max_attempts: 2, jitter: 0%% }
    topics: { partitions: 2 }
    handler:
      http:
        url: http://127.0.0.1:%(http_port)d/handle
        headers: { X-Api-Key: "${KRETRY_BB_API_KEY}" }
"""

SCRAM_SECURITY = """\
  security.protocol: SASL_PLAINTEXT
  sasl.mechanism: SCRAM-SHA-512
  sasl.username: kretry
"""


class Outputs:
    """Every text kretry printed or served, by where it came from."""

    def __init__(self, values):
        self.values = values
        self.texts = []

    def add(self, where, text):
        """Keeps @text, failing at once when it shows a secret."""
        if isinstance(text, bytes):
            text = text.decode(errors="replace")
        self.texts.append((where, text))
        self._clean(where, text)
        return text

    def _clean(self, where, text):
        for name, v in self.values.items():
            if v in text:
                at = text.index(v)
                raise AssertionError(
                    "the %s appears in %s: ...%s..."
                    % (name, where, text[max(0, at - 120):at + 40]))

    def run(self, where, argv, env, want=None, timeout=60):
        r = subprocess.run(argv, env=env, capture_output=True,
                           timeout=timeout)
        out = self.add(where + " stdout", r.stdout)
        self.add(where + " stderr", r.stderr)
        if want is not None:
            check(r.returncode == want, "%s exits %d%s"
                  % (where, want, "" if r.returncode == want else
                     " (got %d: %s)" % (r.returncode, r.stderr[-400:])))
        return out

    def check_clean(self):
        for where, text in self.texts:
            self._clean(where, text)
        print("ok - no secret (%d of them) in any of %d outputs (%d bytes)"
              % (len(self.values), len(self.texts),
                 sum(len(t) for _, t in self.texts)))


class Service(http.server.BaseHTTPRequestHandler):
    """The --http handler's service: 2xx, or 422 (FAIL) for "poison";
    records each request's headers."""
    seen = []
    lock = threading.Lock()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with Service.lock:
            Service.seen.append((body.decode(errors="replace"),
                                 dict(self.headers)))
        fail = body == b"poison"
        self.send_response(422 if fail else 200)
        msg = b"cannot parse\n" if fail else b""
        self.send_header("Content-Length", str(len(msg)))
        self.end_headers()
        self.wfile.write(msg)

    def log_message(self, *args):
        pass


def get(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def produce(bootstrap, topic):
    if not SCRAM:
        kcat(bootstrap, ["-P", "-t", topic, "-K", ":"],
             stdin="".join("k%d:%s\n" % (i, m)
                           for i, m in enumerate(MESSAGES)).encode())
        return
    p = producer(bootstrap_servers=bootstrap,
                 security_protocol="SASL_PLAINTEXT",
                 sasl_mechanism="SCRAM-SHA-512",
                 sasl_plain_username="kretry",
                 sasl_plain_password="kretry-secret",
                 api_version=(2, 5, 0))
    send_all(p, topic, [dict(key=b"k%d" % i, value=m.encode())
                        for i, m in enumerate(MESSAGES)])
    p.close()


def run_until(o, where, argv, env, done, timeout=60):
    """`kretry run` until @done() holds, then SIGTERM; its /metrics,
    /healthz and /readyz (it is started with --metrics 127.0.0.1:0)
    scraped before the stop."""
    err = tempfile.TemporaryFile()
    out = tempfile.TemporaryFile()
    proc = subprocess.Popen(argv + ["--metrics", "127.0.0.1:0"], env=env,
                            stdout=out, stderr=err)
    try:
        port = []

        def metrics_port():
            m = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics",
                          file_text(err))
            port[:] = [int(m.group(1))] if m else []
            return bool(port) or proc.poll() is not None
        wait_for(where + " serves /metrics", metrics_port, 20)
        if not port:
            raise AssertionError(where + " exited at start: " +
                                 file_text(err)[-600:])
        wait_for(where + " handled every message", done, timeout)
        base = "http://127.0.0.1:%d" % port[0]
        # The figures are rendered once a second (503 before the first).
        wait_for(where + " /metrics served",
                 lambda: "kretry_ok_total" in get(base + "/metrics")[1], 20)
        for path in ("/metrics", "/healthz", "/readyz"):
            st, body = get(base + path)
            o.add("%s %s (%d)" % (where, path, st), body)
        proc.send_signal(signal.SIGTERM)
        check(proc.wait(timeout=40) == 0, where + " stops with exit 0")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        o.add(where + " stdout", file_text(out))
        o.add(where + " stderr", file_text(err))
    return o.texts[-1][1]


def dead_letters(o, where, cli, path, name, env):
    text = o.run(where, [cli, "dlq", "inspect", "--topology", path,
                         "--name", name, "--output", "json"], env, want=0)
    return [json.loads(l) for l in text.splitlines() if l.strip()]


def round_(cli, d, how, bootstrap, values, env):
    """One secured run; the password and the command line's header come
    from files (how == "file") or the environment (how == "env")."""
    o = Outputs(values)
    tag = "%s-%d-%d" % (how, os.getpid(), int(time.time() * 1000) % 10**8)
    ex, ht = "secrets-ex-" + tag, "secrets-ht-" + tag
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Service)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Service.seen = []
    broker = None
    try:
        if how == "file":
            pw_file = os.path.join(d, "kafka-password")
            hdr_file = os.path.join(d, "http-token")
            with open(pw_file, "w") as f:
                f.write(values["password"] + "\n")
            with open(hdr_file, "w") as f:
                f.write(values["http header token"] + "\n")
            password_ref = "${file:%s}" % pw_file
            header = "Authorization: Bearer ${file:%s}" % hdr_file
        else:
            env = dict(env, KRETRY_BB_PASSWORD=values["password"],
                       KRETRY_BB_TOKEN=values["http header token"])
            password_ref = "${KRETRY_BB_PASSWORD}"
            header = "Authorization: Bearer ${KRETRY_BB_TOKEN}"
        path = os.path.join(d, "secrets-%s.yaml" % how)

        def write(boot):
            with open(path, "w") as f:
                f.write(TOPOLOGY % {
                    "bootstrap": boot, "password_ref": password_ref,
                    "security": SCRAM_SECURITY if SCRAM else "",
                    "ex": ex, "ht": ht,
                    "http_port": server.server_address[1]})
        if SCRAM:
            write(bootstrap)
        else:
            write("127.0.0.1:1")  # dev-broker reads the topics first
            broker = Broker(cli, ["--topology", path], env=env)
            bootstrap = broker.bootstrap
            write(bootstrap)

        o.run("validate", [cli, "topology", "validate", path], env, want=0)
        text = o.run("describe", [cli, "topology", "describe", path], env,
                     want=0)
        check("sasl.password = [redacted]" in text and
              "header Authorization" not in text and
              "header X-Api-Key: [redacted]" in text,
              "describe shows the secrets masked")
        doc = json.loads(o.run("describe --output json",
                               [cli, "topology", "describe", path,
                                "--output", "json"], env, want=0))
        check(doc[0]["kafka"]["sasl.oauthbearer.client.secret"] ==
              "[redacted]", "describe --output json masks them")
        o.run("apply", [cli, "topology", "apply", path, "--yes"], env,
              want=0 if SCRAM else None)
        produce(bootstrap, ex)
        produce(bootstrap, ht)

        log = os.path.join(d, "handled-" + how)
        x = ["-X", "debug=all"] + group_x(
            "consumer.session.timeout.ms=6000",
            "consumer.heartbeat.interval.ms=500")

        def handled():
            if not os.path.exists(log):
                return False
            with open(log) as f:
                return set(f.read().split()) == set(MESSAGES)
        run_until(o, "run --exec", [cli, "run", "--topology", path,
                                    "--name", "ex", "--verbose"] + x +
                  ["--exec", HANDLER], dict(env, LOG=log), handled)

        def answered():
            with Service.lock:
                return set(b for b, _ in Service.seen) == set(MESSAGES)
        run_until(o, "run --http", [cli, "run", "--topology", path,
                                    "--name", "ht", "--verbose",
                                    "--http-header", header] + x, env,
                  answered)
        with Service.lock:
            hdrs = Service.seen[0][1]
        check(hdrs.get("Authorization") ==
              "Bearer " + values["http header token"] and
              hdrs.get("X-Api-Key") == values["api key"],
              "the service received both headers' secrets")

        for name in ("ex", "ht"):
            rows = dead_letters(o, "dlq inspect " + name, cli, path, name,
                                env)
            check(len(rows) == 1, "%s: the poison message dead-lettered "
                  "(%d rows)" % (name, len(rows)))
            o.run("dlq inspect text " + name,
                  [cli, "dlq", "inspect", "--topology", path, "--name",
                   name], env, want=0)
        o.run("dlq replay --dry-run",
              [cli, "dlq", "replay", "--topology", path, "--name", "ex",
               "--dry-run"], env, want=0)
        o.run("dlq export", [cli, "dlq", "export", "--topology", path,
                             "--name", "ex", "--out",
                             os.path.join(d, "dlq-%s.avro" % how)], env,
              want=0)
        for fmt in ("table", "json", "prometheus"):
            o.run("stats " + fmt, [cli, "stats", "--topology", path,
                                   "--name", "ex", "--output", fmt], env,
                  want=0)
        o.run("stats --check", [cli, "stats", "--topology", path, "--name",
                                "ex", "--check"], env, want=2)

        ui = Broker(cli, ["--topology", path, "--listen", "127.0.0.1:0",
                          "--token", values["ui token"]], command="ui",
                    env=env)
        try:
            url = ui.bootstrap.rstrip("/")
            bearer = {"Authorization": "Bearer " + values["ui token"]}
            for p in ("/", "/api/topologies", "/api/dlq?topology=ex",
                      "/api/groups?topology=ex", "/api/history?topology=ex",
                      "/metrics"):
                st, body = get(url + p, bearer)
                o.add("ui %s (%d)" % (p, st), body)
                check(st == 200, "ui %s answers 200" % p)
            st, body = get(url + "/?token=" + values["ui token"])
            o.add("ui /?token= (%d)" % st, body)
            st, body = get(url + "/api/topologies",
                           {"Authorization": "Bearer wrong-token-0123456"})
            o.add("ui wrong token (%d)" % st, body)
            check(st == 401, "ui refuses a wrong token (%d)" % st)
            ui.stop()
        finally:
            ui.kill()
            o.add("ui stdout", ui.bootstrap)
            o.add("ui stderr", ui.stderr_text())

        o.run("run -X ssl.truststore.password",
              [cli, "run", "--topology", path, "--name", "ex", "-X",
               "ssl.truststore.password=" + values["truststore password"],
               "--exec", "true"], env, want=64)
        check(o.texts[-1][1].count("ssl.truststore.password=[redacted]") == 1,
              "the refused -X shows the mask")
        o.check_clean()
    finally:
        server.shutdown()
        if broker:
            broker.kill()


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    cli = sys.argv[1]
    if real_bootstrap() and not SCRAM:
        print("SKIPPED: blackbox_secrets on real Kafka needs the SCRAM "
              "listener (KRETRY_TEST_SCRAM_BOOTSTRAP, scripts/kafka.sh start "
              "--scram); without a real cluster it runs on dev-broker")
        return SKIP
    for how in ("file", "env"):
        values = {
            "password": "kretry-secret" if SCRAM else
            "pw-" + rnd.token_hex(8),
            "ssl key password": "sslkey-" + rnd.token_hex(8),
            "OAUTHBEARER client secret": "oidc-" + rnd.token_hex(8),
            "OAUTHBEARER config": "cfgsecret" + rnd.token_hex(8),
            "api key": "apikey-" + rnd.token_hex(8),
            "http header token": "hdrtok-" + rnd.token_hex(8),
            "ui token": "uitoken-" + rnd.token_hex(12),
            "truststore password": "trust-" + rnd.token_hex(8),
        }
        env = dict(os.environ,
                   KRETRY_BB_KEY_PASSWORD=values["ssl key password"],
                   KRETRY_BB_OIDC_SECRET=values["OAUTHBEARER client secret"],
                   KRETRY_BB_OAUTH_CONFIG="principal=kretry secret=" +
                   values["OAUTHBEARER config"],
                   KRETRY_BB_API_KEY=values["api key"])
        with tempfile.TemporaryDirectory() as d:
            print("# round: secrets from %s, %s" %
                  ("files" if how == "file" else "the environment",
                   "SCRAM on " + SCRAM if SCRAM else "dev-broker"))
            round_(cli, d, how, SCRAM, values, env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
