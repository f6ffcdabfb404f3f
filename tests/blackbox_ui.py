#!/usr/bin/python3
"""Black-box test of `kretry ui`'s HTTP API (docs/ui.md) against a `kretry
dev-broker` (or the real cluster in KRETRY_TEST_BOOTSTRAP, bbkafka.py)
whose DLQ kafka-python seeded: the figures, the DLQ browser's
filters and paging, one message, dry-run and real replay with progress,
export, Prometheus text, and every refusal of the security rules (Host,
token, origin, methods, sizes, malformed input).

usage: blackbox_ui.py PATH/TO/kretry
Exit 0 on success, 1 on failure, 77 (skipped) when kafka-python or
python3-avro is missing.
"""
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ui_seed import (SEEDED, SKIP, UI, chain, check, get_json,  # noqa: E402
                     http, kafka_kwargs, seed, service_yaml, source_messages,
                     start_cluster)

TOKEN = "0123456789abcdef-secret"


def skip_if_missing():
    try:
        import avro.datafile  # noqa: F401
        import kafka  # noqa: F401
    except ImportError as e:
        print("SKIPPED: blackbox_ui: %s (Debian packages python3-kafka, "
              "python3-avro)" % e)
        sys.exit(SKIP)


def q(url, path, **params):
    return url + path.lstrip("/") + ("?" + urllib.parse.urlencode(params)
                                     if params else "")


def step_figures(url, k):
    doc = get_json(q(url, "api/topologies", window="500ms"))
    (t,) = doc["topologies"]
    dlq = [x for x in t["topics"] if x["role"] == "dlq"][0]
    check(dlq["waiting"] == SEEDED, "DLQ waiting %r" % dlq["waiting"])
    check(dlq["oldest_age_ms"] >= 7200000 - 5000, "oldest age %r"
          % dlq["oldest_age_ms"])
    alert = [a for a in t["alerts"] if a["rule"] == "dlq_messages"][0]
    check(alert["state"] == "alert" and alert["value"] == SEEDED,
          "dlq_messages alert %r" % alert)
    rate = [a for a in t["alerts"] if a["rule"] == "dlq_rate"][0]
    check(rate["state"] == "ok" and rate["value"] == 0 and
          rate["limit"] == 20, "dlq_rate alert %r" % rate)
    check(doc["show_values"] is False, "show_values %r" % doc["show_values"])
    status, h, body = http(q(url, "metrics", window="0"))
    text = body.decode()
    check(status == 200 and h["Content-Type"].startswith("text/plain"),
          "/metrics: %d %s" % (status, h["Content-Type"]))
    check('kretry_topic_waiting_messages{topology="orders",topic='
          '"%s",role="dlq"} %d' % (k.name("orders.dlq"), SEEDED) in text,
          "metrics:\n" + text)
    check('kretry_alert_firing{topology="orders",rule="dlq_messages",'
          'topic="%s"} 1' % k.name("orders.dlq") in text,
          "alert metric:\n" + text)
    print("ok: figures (%d waiting in the DLQ, alert firing) and metrics"
          % SEEDED)


def step_overview_cached(url):
    """GET /api/topologies without a window reads the figures the server
    takes every interval: fast, with their age; /api/history keeps each
    round's DLQ size and the tiers' figures, oldest first."""
    t0 = time.monotonic()
    doc = get_json(q(url, "api/topologies"))
    took = time.monotonic() - t0
    interval = doc["interval_ms"]
    (t,) = doc["topologies"]
    dlq = [x for x in t["topics"] if x["role"] == "dlq"][0]
    check(dlq["waiting"] == SEEDED, "cached DLQ waiting %r" % dlq["waiting"])
    check(0 <= t["age_ms"] <= interval + 15000, "age %r" % t["age_ms"])
    # the next round's figures: awaited through the history's count
    first = get_json(q(url, "api/history", topology="orders"))
    deadline = time.monotonic() + interval / 1000 + 20
    h = first
    while h["count"] < first["count"] + 1 and time.monotonic() < deadline:
        select_wait = min(0.2, max(deadline - time.monotonic(), 0))
        time.sleep(select_wait)  # polling the server: its rounds are timed
        h = get_json(q(url, "api/history", topology="orders"))
    check(h["count"] >= 2, "history count %d" % h["count"])
    check(h["idle_interval_ms"] == 60000, "idle interval %r"
          % h.get("idle_interval_ms"))
    check(h["at_ms"] == sorted(h["at_ms"]), "history not oldest first")
    check(h["dlq_waiting"][-1] == SEEDED, "history DLQ %r" % h["dlq_waiting"])
    check([x["tier"] for x in h["tiers"]] == [1, 2], "tiers %r" % h["tiers"])
    check(len(h["tiers"][0]["waiting"]) == h["count"], "tier column length")
    since = get_json(q(url, "api/history", topology="orders",
                       since=str(h["at_ms"][-1])))
    check(since["count"] == 1, "since: %d" % since["count"])
    # read from the cache: far faster than a round's 2 s window
    t0 = time.monotonic()
    for _ in range(5):
        get_json(q(url, "api/topologies"))
    each = (time.monotonic() - t0) / 5
    check(each < 0.5, "GET /api/topologies took %.2f s each" % each)
    status, _, _ = http(q(url, "api/history", topology="orders", since="x"))
    check(status == 400, "since=x: %d" % status)
    print("ok: overview from the server's last round (%.3f s, then %.3f s "
          "each), history of %d rounds" % (took, each, h["count"]))


def step_groups(url, k, msgs):
    """GET /api/groups: the seeded dead letters by class, code and
    original topic, with count, first and last seen."""
    doc = get_json(q(url, "api/groups", topology="orders"))
    want = {}
    for m in msgs:
        g = want.setdefault((m["class"], m["code"]), [0, None, None])
        g[0] += 1
        g[1] = m["ts"] if g[1] is None else min(g[1], m["ts"])
        g[2] = m["ts"] if g[2] is None else max(g[2], m["ts"])
    got = {(g["class"], g["code"]): [g["count"], g["first_seen"],
                                     g["last_seen"]] for g in doc["groups"]}
    check(got == want, "groups %r, expected %r" % (got, want))
    check(all(g["original_topic"] == k.name("orders") for g in doc["groups"]),
          "original topics %r" % doc["groups"])
    counts = [g["count"] for g in doc["groups"]]
    check(counts == sorted(counts, reverse=True), "not largest first")
    check(doc["complete"] is True and doc["read"] == SEEDED and
          doc["other"] == 0, "groups doc %r" % doc)
    status, _, _ = http(q(url, "api/groups", topology="orders", limit="1"))
    check(status == 400, "groups with an unknown parameter: %d" % status)
    print("ok: %d failure groups of %d dead letters"
          % (len(doc["groups"]), doc["read"]))


def step_dlq_rate(url, k):
    """Messages arriving in the DLQ during the window fire dlq_rate."""
    from kafka import KafkaProducer
    result = {}

    def ask():
        result["doc"] = get_json(q(url, "api/topologies", window="3s"))
    th = threading.Thread(target=ask)
    th.start()
    prod = KafkaProducer(bootstrap_servers=k.bootstrap, **kafka_kwargs())
    # inside the window: its first snapshot is taken within a second (the
    # server cannot be watched taking it); counted or not, 10 in 3 s is
    # far above the limit of 20 a minute
    time.sleep(1.0)
    for i in range(10):
        prod.send(k.name("orders.dlq"), key=b"late", value=b"x", partition=0)
    prod.flush()
    prod.close()
    th.join(30)
    (t,) = result["doc"]["topologies"]
    rate = [a for a in t["alerts"] if a["rule"] == "dlq_rate"][0]
    # 10 messages in 3 s: 200 a minute
    check(rate["state"] == "alert" and 20 <= rate["value"] <= 200,
          "dlq_rate alert %r" % rate)
    status, _, body = http(q(url, "metrics", window="0"))
    check(b'rule="dlq_rate"' not in body, "an unknown dlq_rate in metrics")
    print("ok: dlq_rate fires at %s" % rate["text"])


ORDER = {"order_id": "o-1", "version": 3, "customer": "c-9",
         "amount_cents": 1250, "currency": "EUR", "status": "PAID",
         "express": False, "items": [{"sku": "s-1", "quantity": 2}],
         "note": None}


def step_avro(cli, k, d):
    """A topology with an Avro value: with --show-values the detail
    decodes it with the topology's schema (and says why when it does
    not)."""
    import avro.io
    import avro.schema
    from kafka import KafkaProducer
    avsc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "schemas", "examples", "order.avsc")
    path = os.path.join(d, "pay.yaml")
    with open(path, "w") as f:
        f.write("kafka:\n" + service_yaml() + "  socket.nagle.disable: "
                "\"true\"\ntopologies:\n  - name: pay\n    source: %s\n"
                "    group: %s\n    retry: { tiers: [1s] }\n"
                "    value: { format: avro, schema: %s, wire: raw }\n"
                % (k.name("pay"), k.group("pay-service"), avsc))
    with open(avsc) as f:
        schema = avro.schema.parse(f.read())
    buf = io.BytesIO()
    avro.io.DatumWriter(schema).write(ORDER, avro.io.BinaryEncoder(buf))
    prod = KafkaProducer(bootstrap_servers=k.bootstrap, **kafka_kwargs())
    for v in (buf.getvalue(), b"not avro at all"):
        prod.send(k.name("pay.dlq"), key=b"o-1", value=v, partition=0,
                  headers=[("kretry-error-class", b"schema")]).get(10)
    prod.close()
    ui = UI(cli, ["--topology", path, "--bootstrap", k.bootstrap, "--listen",
                  "127.0.0.1:0", "--show-values"])
    try:
        good = get_json(ui.url + "api/dlq/0/0")
        check(good["value_avro"] == ORDER and good["value_hex"] ==
              buf.getvalue().hex(), "decoded %r" % good.get("value_avro"))
        bad = get_json(ui.url + "api/dlq/0/1")
        check(bad["value_avro"] is None and bad["value_avro_error"] and
              bad["value"] == "not avro at all", "undecodable %r" % bad)
        check(ui.stop() == 0, "SIGTERM: exit status")
    finally:
        ui.kill()
    print("ok: an Avro value decoded with the topology's schema; an "
          "undecodable one says why (%s)" % bad["value_avro_error"])


def rows(url, **params):
    return get_json(q(url, "api/dlq", **params))


def step_browse(url, msgs):
    doc = rows(url)
    got = [(r["partition"], r["offset"]) for r in doc["rows"]]
    want = [(m["partition"], m["offset"]) for m in msgs]
    check(got == want, "all rows: %r, expected %r" % (got, want))
    check(doc["next_cursor"] is None, "cursor at the end %r"
          % doc["next_cursor"])
    r0 = doc["rows"][0]
    check(r0["class"] == msgs[0]["class"] and r0["error"] == "failure 0" and
          r0["attempts"] == 3 and r0["original_offset"] == 100 and
          r0["first_failure_ts"] == msgs[0]["first"], "row 0: %r" % r0)
    check("value" not in r0 and "value_hex" not in r0,
          "a value without --show-values: %r" % r0)
    binkey = [r for r in doc["rows"] if r["offset"] == 2 and
              r["partition"] == 1][0]
    check(binkey.get("key_hex") == "00ff62696e", "binary key %r" % binkey)
    for name, value, pred in [
            ("class", "permanent", lambda m: m["class"] == "permanent"),
            ("code", "HTTP_503", lambda m: m["code"] == "HTTP_503"),
            ("key", "k7", lambda m: m["key"] == b"k7"),
            ("since", "1h", lambda m: m["i"] >= 4),
            ("until", "1h", lambda m: m["i"] < 4)]:
        got = [(r["partition"], r["offset"])
               for r in rows(url, **{name: value})["rows"]]
        want = [(m["partition"], m["offset"]) for m in msgs if pred(m)]
        check(got == want and want, "%s=%s: %r, expected %r"
              % (name, value, got, want))
    both = rows(url, **{"class": "permanent", "since": "1h"})["rows"]
    check(len(both) == sum(1 for m in msgs if m["class"] == "permanent" and
                           m["i"] >= 4), "two filters: %r" % both)
    # paging: 5 at a time, every row once, in order
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": "5"}
        if cursor:
            params["cursor"] = cursor
        page = rows(url, **params)
        pages += 1
        check(len(page["rows"]) <= 5, "page of %d" % len(page["rows"]))
        seen += [(r["partition"], r["offset"]) for r in page["rows"]]
        cursor = page["next_cursor"]
        if not cursor or pages > 10:
            break
    check(seen == want_all(msgs), "paged: %r" % seen)
    check(pages == 3, "pages: %d" % pages)
    print("ok: browse, every filter, paging (%d pages)" % pages)


def want_all(msgs):
    return [(m["partition"], m["offset"]) for m in msgs]


def step_message(url, msgs):
    m = msgs[-1]
    doc = get_json(q(url, "api/dlq/%d/%d" % (m["partition"], m["offset"])))
    names = [h["name"] for h in doc["headers"]]
    check("trace" in names and "kretry-error-code" in names and
          len(names) == 11, "headers %r" % names)
    check(doc["timestamp"] == m["ts"] and doc["last_failure_ts"] == m["ts"]
          and doc["error"] == m["error"] and doc["value_size"] == len(
              m["value"]), "detail %r" % doc)
    check("value" not in doc and "value_hex" not in doc and
          doc["values_shown"] is False, "value shown: %r" % doc)
    for path, want in [("api/dlq/1/99", 404), ("api/dlq/7/0", 404),
                       ("api/dlq/x/1", 400), ("api/dlq/1", 400),
                       ("api/dlq/1/-1", 400), ("api/dlq/1/2/3", 400)]:
        status, _, body = http(url + path)
        check(status == want, "%s: %d, expected %d" % (path, status, want))
        check(json.loads(body)["status"] == want, "%s: body %r" % (path, body))
    print("ok: one message (headers, timestamps, no value); 404 and 400")


def step_bad_params(url):
    for params, want in [({"limit": "0"}, 400), ({"limit": "1001"}, 400),
                         ({"limit": "ten"}, 400), ({"since": "yesterday"}, 400),
                         ({"cursor": "1"}, 400), ({"cursor": "a:b"}, 400),
                         ({"cursor": "-1:0"}, 400), ({"nosuch": "1"}, 400),
                         ({"code": "x" * 300}, 400),
                         ({"topology": "nosuch"}, 404)]:
        status, h, body = http(q(url, "api/dlq", **params))
        check(status == want and h["Content-Type"] == "application/json" and
              json.loads(body)["error"], "%r: %d %r" % (params, status, body))
    for path, want in [("nosuch", 404), ("api/replay", 405),
                       ("api/replay/99", 404), ("api/replay/0", 404),
                       ("api/topologies?window=2h", 400),
                       ("metrics?window=x", 400)]:
        status, _, _ = http(url + path)
        check(status == want, "%s: %d, expected %d" % (path, status, want))
    status, _, _ = http(url + "api/dlq", method="DELETE")
    check(status == 405, "DELETE: %d" % status)
    status, _, _ = http(url + "api/dlq", method="POST", body={})
    check(status == 405, "POST /api/dlq: %d" % status)
    print("ok: malformed parameters, unknown routes and methods refused")


def step_bad_posts(url, k):
    for body, want in [(b"not json", 400), (b"[]", 400), (b"", 400),
                       ({"nosuch": 1}, 400), ({"rate": 0}, 400),
                       ({"rate": "fast"}, 400), ({"dry_run": "yes"}, 400),
                       ({"rows": []}, 400), ({"rows": [{"partition": 0}]}, 400),
                       ({"rows": [{"partition": 0, "offset": 0}] * 1001}, 400),
                       ({"filter": {"since": "soon"}}, 400),
                       ({"filter": {"nosuch": "x"}}, 400),
                       ({"to": k.name("orders.dlq")}, 400),
                       ({"to": "tier:3"}, 400),
                       ({"to": "elsewhere"}, 400), ({"topology": 1}, 400),
                       ({"topology": "nosuch"}, 404),
                       (b"{" + b" " * 70000 + b"}", 413)]:
        status, _, resp = http(url + "api/replay", method="POST", body=body)
        check(status == want, "POST %r: %d, expected %d: %r"
              % (body[:40] if isinstance(body, bytes) else body, status,
                 want, resp[:200]))
    status, _, _ = http(url + "api/replay", method="POST", body=b"{}",
                        headers={"Content-Type": "text/plain"})
    check(status == 415, "text/plain POST: %d" % status)
    for h in [{"Origin": "http://evil.example"},
              {"Origin": "null"},
              {"Sec-Fetch-Site": "cross-site"},
              {"Sec-Fetch-Site": "same-site"}]:
        status, _, _ = http(url + "api/replay", method="POST",
                            body={"dry_run": True}, headers=h)
        check(status == 403, "cross-origin %r: %d" % (h, status))
    host = urllib.parse.urlparse(url).netloc
    status, _, _ = http(url + "api/dlq", headers={"Host": "rebind.example:%s"
                                                  % host.split(":")[1]})
    check(status == 403, "foreign Host without a token: %d" % status)
    print("ok: malformed, oversized and cross-origin POSTs refused; "
          "foreign Host refused")


def wait_job(url, job, timeout=60):
    """Polls the job until it ends; returns (final, states seen)."""
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        doc = get_json(url + "api/replay/%d" % job["id"])
        seen.append(doc)
        if doc["state"] != "running":
            return doc, seen
        check(time.monotonic() < deadline, "replay still running: %r" % doc)
        time.sleep(0.05)


def post_replay(url, body, want=202, headers=None):
    status, _, resp = http(url + "api/replay", method="POST", body=body,
                           headers=headers)
    check(status == want, "POST %r: %d, expected %d: %r"
          % (body, status, want, resp[:300]))
    return json.loads(resp)


def step_replay(url, k, msgs):
    code = [m for m in msgs if m["code"] == "HTTP_503"]
    job = post_replay(url, {"dry_run": True, "filter": {"code": "HTTP_503"}})
    check(job["state"] == "running" and job["dry_run"] is True and
          job["target"] == k.name("orders"), "dry-run job %r" % job)
    final, _ = wait_job(url, job)
    check(final["state"] == "done" and final["replayed"] == len(code) and
          final["read"] == SEEDED and final["total"] == SEEDED and
          final["before_resume"] == 0, "dry run %r" % final)
    check(source_messages(k, 0) == [], "the dry run wrote nothing: the "
          "source read to its end offsets is empty")
    # real replay of two chosen rows, at 4 messages a second: progress
    pick = [msgs[1], msgs[-1]]
    body = {"rows": [{"partition": m["partition"], "offset": m["offset"]}
                     for m in pick], "rate": 4, "batch": 1}
    job = post_replay(url, body)
    conflict = post_replay(url, {"dry_run": True}, want=409)
    check("still running" in conflict["error"], "409 %r" % conflict)
    final, seen = wait_job(url, job)
    check(final["state"] == "done" and final["replayed"] == 2 and
          final["error"] is None, "replay %r" % final)
    done = [s["replayed"] for s in seen]
    check(done == sorted(done) and any(s["state"] == "running" and
                                       s["read"] > 0 for s in seen),
          "progress never seen moving: %r" % seen)
    got = source_messages(k, 2)
    check(sorted((r.key, r.value) for r in got) ==
          sorted((m["key"], m["value"]) for m in pick),
          "replayed messages %r" % [(r.key, r.value) for r in got])
    for r in got:
        h = dict(r.headers)
        check(h.get("kretry-replay-count") == b"1" and h.get("trace"),
              "replayed headers %r" % r.headers)
    # resumable: the progress group says the DLQ was read, so a second
    # replay without restart finds nothing; stop ends a slow one
    again, _ = wait_job(url, post_replay(url, {"dry_run": True}))
    check(again["replayed"] == 0 and again["total"] == 0 and
          again["before_resume"] == SEEDED,
          "after the replay, from its progress: %r" % again)
    # the replay trap: a filter matching nothing after the progress says
    # how many it matches before it, which a restart includes
    exhausted = [m for m in msgs if m["class"] == "exhausted"]
    trap, _ = wait_job(url, post_replay(
        url, {"dry_run": True, "filter": {"class": "exhausted"}}))
    check(trap["replayed"] == 0 and
          trap["before_resume"] == len(exhausted),
          "exhausted after the progress: %r" % trap)
    whole, _ = wait_job(url, post_replay(
        url, {"dry_run": True, "restart": True,
              "filter": {"class": "exhausted"}}))
    check(whole["replayed"] == len(exhausted) and
          whole["before_resume"] is None, "restarted dry run %r" % whole)
    job = post_replay(url, {"restart": True, "rate": 1, "batch": 1,
                            "filter": {"class": "schema"}})
    status, _, body = http(url + "api/replay/%d/stop" % job["id"],
                           method="POST", body={})
    check(status == 202, "stop: %d %r" % (status, body))
    final, _ = wait_job(url, job)
    check(final["state"] == "stopped" and final["replayed"] < 4,
          "stopped job %r" % final)
    status, _, _ = http(url + "api/replay/%d/stop" % job["id"])
    check(status == 405, "GET .../stop: %d" % status)
    print("ok: dry run counts %d and writes nothing; replay of 2 rows with "
          "progress, 409 meanwhile; resumes from its progress; stop"
          % len(code))


def step_export(url, msgs, values):
    from avro.datafile import DataFileReader
    from avro.io import DatumReader
    status, h, body = http(q(url, "api/export", code="HTTP_503"))
    check(status == 200 and h["Content-Type"] == "application/avro" and
          "attachment" in h["Content-Disposition"] and body[:4] == b"Obj\x01",
          "export: %d %r %r" % (status, dict(h), body[:20]))
    recs = list(DataFileReader(io.BytesIO(body), DatumReader()))
    want = [m for m in msgs if m["code"] == "HTTP_503"]
    check([(r["partition"], r["offset"]) for r in recs] ==
          [(m["partition"], m["offset"]) for m in want],
          "exported %r" % [(r["partition"], r["offset"]) for r in recs])
    check(all(r["error_code"] == "HTTP_503" for r in recs), "codes")
    check([r["value"] for r in recs] ==
          ([m["value"] for m in want] if values else [None] * len(want)),
          "values %r (shown: %s)" % ([r["value"] for r in recs], values))
    status, _, _ = http(q(url, "api/export", codec="zip"))
    check(status == 400, "codec zip: %d" % status)
    print("ok: export of %d rows as Avro, values %s" %
          (len(recs), "included" if values else "null"))


def step_token(cli, path, k, msgs):
    refused = subprocess.run([cli, "ui", "--topology", path, "--bootstrap",
                              k.bootstrap, "--listen", "0.0.0.0:0"],
                             capture_output=True, timeout=10)
    check(refused.returncode == 1 and b"refusing to listen on 0.0.0.0:0 "
          b"without a token" in refused.stderr,
          "0.0.0.0 without a token: %d %r" % (refused.returncode,
                                              refused.stderr))
    short = subprocess.run([cli, "ui", "--topology", path, "--token", "abc"],
                           capture_output=True, timeout=10)
    check(short.returncode == 64 and b"too short" in short.stderr,
          "short token: %d %r" % (short.returncode, short.stderr))
    env = dict(os.environ, KRETRY_UI_TOKEN=TOKEN)
    ui = UI(cli, ["--topology", path, "--bootstrap", k.bootstrap,
                  "--listen", "0.0.0.0:0", "--show-values"], env=env)
    try:
        port = ui.url.rstrip("/").rsplit(":", 1)[1]
        url = "http://127.0.0.1:%s" % port
        for h, want in [({}, 401), ({"Authorization": "Bearer wrong"}, 401),
                        ({"Authorization": "Bearer " + TOKEN[:-1]}, 401),
                        ({"Authorization": "Bearer " + TOKEN}, 200)]:
            status, _, _ = http(url + "/api/dlq?limit=1", headers=h)
            check(status == want, "token %r: %d, expected %d"
                  % (h, status, want))
        for path_, want in [("/?token=" + TOKEN, 200), ("/", 401),
                            ("/metrics?token=nope", 401)]:
            status, _, _ = http(url + path_)
            check(status == want, "%s: %d" % (path_, status))
        auth = {"Authorization": "Bearer " + TOKEN}
        status, _, _ = http(url + "/api/replay", method="POST",
                            body={"dry_run": True},
                            headers=dict(auth, Origin="http://evil.example"))
        check(status == 403, "token but cross-origin: %d" % status)
        m = msgs[3]
        doc = get_json(url + "/api/dlq/%d/%d" % (m["partition"], m["offset"]),
                       headers=auth)
        check(doc["value"] == m["value"].decode() and
              doc["value_hex"] == m["value"].hex() and doc["values_shown"],
              "--show-values detail %r" % doc)
        row = get_json(url + "/api/dlq?limit=1", headers=auth)["rows"][0]
        check(row["value"] == "value-0", "--show-values row %r" % row)
        status, h, body = http(url + "/api/export?code=HTTP_503&token=" +
                               TOKEN)
        check(status == 200 and body[:4] == b"Obj\x01", "export with token")
        check(ui.stop() == 0, "SIGTERM: exit status")
    finally:
        ui.kill()
    print("ok: no token no 0.0.0.0; token checked on every request; "
          "--show-values shows values")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    cli = sys.argv[1]
    skip_if_missing()
    d = tempfile.mkdtemp(prefix="kretry-ui-")
    # the pay topology of step_avro (its chain created on dev-broker too)
    broker, path = start_cluster(cli, d, chain("pay", 1, 1))
    ui = None
    try:
        msgs = seed(broker)
        ui = UI(cli, ["--topology", path, "--bootstrap", broker.bootstrap,
                      "--listen", "127.0.0.1:0"])
        check(ui.url.startswith("http://127.0.0.1:"), "URL %r" % ui.url)
        step_figures(ui.url, broker)
        step_overview_cached(ui.url)
        step_groups(ui.url, broker, msgs)
        step_browse(ui.url, msgs)
        step_message(ui.url, msgs)
        step_bad_params(ui.url)
        step_bad_posts(ui.url, broker)
        step_export(ui.url, msgs, False)
        step_replay(ui.url, broker, msgs)
        log = ui.stderr_text()
        src, dlq = broker.name("orders"), broker.name("orders.dlq")
        started = "replay 2 started: chosen rows of topology orders into " \
            + src
        done = "replay 2 done: 2 messages replayed to %s (12 read from " \
            "%s)" % (src, dlq)
        check(started in log and done in log,
              "no record of the replay in the log:\n" + log)
        step_token(cli, path, broker, msgs)
        step_dlq_rate(ui.url, broker)
        step_avro(cli, broker, d)
        check(ui.stop() == 0, "SIGTERM: exit status")
        return 0
    except AssertionError as e:
        print("FAIL: %s" % e)
        if ui:
            print("kretry ui stderr:\n" + ui.stderr_text())
        return 1
    finally:
        if ui:
            ui.kill()
        broker.kill()


if __name__ == "__main__":
    sys.exit(main())
