#!/usr/bin/python3
"""Black-box test: OAUTHBEARER with OIDC client credentials passes through.

A topology file's kafka: section declares sasl.mechanism OAUTHBEARER with
sasl.oauthbearer.method oidc, a client id, a client secret (from a file,
${file:PATH}), a token endpoint on loopback (a tiny OAuth 2 token endpoint
in this script, answering a JWT) and a scope. `kretry run` must neither
refuse nor drop those properties: librdkafka then asks the endpoint for a
token with the client credentials grant, the id and secret in HTTP Basic
authentication and the scope in the form. `kretry topology describe` shows
the secret masked, and neither the secret, its Basic credential nor the
access token appears in the run's output (--verbose, librdkafka's
debug=all).

What this does not prove: a broker accepting the token. The broker here is
`kretry dev-broker` (the mock has no SASL, so each connection fails after
the token was fetched); a Kafka broker validating the JWT against a JWKS
(OAuthBearerValidatorCallbackHandler) is not run by the suite
(docs/real-kafka.md).

usage: blackbox_oidc.py PATH/TO/kretry
"""
import base64
import http.server
import json
import os
import secrets as rnd
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import Broker, check, file_text, wait_for  # noqa: E402

CLIENT_ID = "kretry-orders"
SCOPE = "kafka.produce kafka.consume"

TOPOLOGY = """\
kafka:
  bootstrap.servers: %(bootstrap)s
  security.protocol: SASL_PLAINTEXT
  sasl.mechanism: OAUTHBEARER
  sasl.oauthbearer.method: oidc
  sasl.oauthbearer.client.id: %(client_id)s
  sasl.oauthbearer.client.secret: ${file:%(secret_file)s}
  sasl.oauthbearer.token.endpoint.url: http://127.0.0.1:%(port)d/oauth2/token
  sasl.oauthbearer.scope: %(scope)s
topologies:
  - source: oidc-orders
    group: oidc-orders-service
    retry: { tiers: [1s], max_attempts: 2, jitter: 0%% }
"""


def b64url(doc):
    return base64.urlsafe_b64encode(
        json.dumps(doc).encode()).rstrip(b"=").decode()


class TokenEndpoint(http.server.BaseHTTPRequestHandler):
    """POST /oauth2/token: records the request, answers a JWT (librdkafka
    reads its exp and sub; the signature is the broker's to check)."""
    requests = []
    token = None
    lock = threading.Lock()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        now = int(time.time())
        TokenEndpoint.token = (b64url({"alg": "RS256", "typ": "JWT"}) + "." +
                               b64url({"sub": CLIENT_ID, "iat": now,
                                       "exp": now + 3600, "scope": SCOPE}) +
                               "." + rnd.token_urlsafe(32))
        with TokenEndpoint.lock:
            TokenEndpoint.requests.append((self.path, dict(self.headers),
                                           body.decode(errors="replace")))
        out = json.dumps({"access_token": TokenEndpoint.token,
                          "token_type": "bearer",
                          "expires_in": 3600}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    cli = sys.argv[1]
    secret = "oidc-secret-" + rnd.token_hex(12)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), TokenEndpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    broker = Broker(cli, ["--topic", "oidc-orders:1", "--topic",
                          "oidc-orders.retry.1:1", "--topic",
                          "oidc-orders.dlq:1"])
    run = None
    try:
        with tempfile.TemporaryDirectory() as d:
            secret_file = os.path.join(d, "client-secret")
            with open(secret_file, "w") as f:
                f.write(secret + "\n")
            path = os.path.join(d, "oidc.yaml")
            with open(path, "w") as f:
                f.write(TOPOLOGY % {"bootstrap": broker.bootstrap,
                                    "client_id": CLIENT_ID,
                                    "secret_file": secret_file,
                                    "port": server.server_address[1],
                                    "scope": SCOPE})
            r = subprocess.run([cli, "topology", "describe", path],
                               capture_output=True, timeout=30)
            described = r.stdout.decode()
            check(r.returncode == 0 and
                  "sasl.oauthbearer.client.secret = [redacted]" in described
                  and "sasl.oauthbearer.method = oidc" in described and
                  secret not in described,
                  "describe shows the OIDC properties, the secret masked")

            err = tempfile.TemporaryFile()
            run = subprocess.Popen([cli, "run", "--topology", path,
                                    "--verbose", "-X", "debug=all", "-X",
                                    "topology.check=warn", "--exec", "true"],
                                   stdout=err, stderr=err)

            def asked():
                with TokenEndpoint.lock:
                    return bool(TokenEndpoint.requests)
            wait_for("librdkafka asked the token endpoint for a token",
                     asked, 30)
            # Asked is not yet set: the answer is handled on librdkafka's
            # thread, which logs it (slower under the sanitizers).
            try:
                wait_for("librdkafka set the token it received (debug log)",
                         lambda: "OAUTHBEARER token" in file_text(err), 30)
            except AssertionError:
                print("# kretry run's output, last lines:\n# " + "\n# ".join(
                    file_text(err).splitlines()[-25:]))
                raise
            run.send_signal(signal.SIGTERM)
            run.wait(timeout=60)
            out = file_text(err)
            with TokenEndpoint.lock:
                p, headers, body = TokenEndpoint.requests[0]
            form = urllib.parse.parse_qs(body)
            basic = base64.b64encode(
                ("%s:%s" % (CLIENT_ID, secret)).encode()).decode()
            check(p == "/oauth2/token", "POST to the endpoint's path (%s)"
                  % p)
            check(headers.get("Authorization") == "Basic " + basic,
                  "the client id and the secret (from the file) in Basic "
                  "authentication")
            check(form.get("grant_type") == ["client_credentials"] and
                  form.get("scope") == [SCOPE],
                  "grant_type client_credentials, the scope as declared "
                  "(%r)" % form)
            for name, v in (("client secret", secret),
                            ("Basic credential", basic),
                            ("access token", TokenEndpoint.token)):
                check(v not in out, "the %s is not in the run's output "
                      "(%d bytes)" % (name, len(out)))
    finally:
        if run and run.poll() is None:
            run.kill()
            run.wait(timeout=10)
        broker.kill()
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
