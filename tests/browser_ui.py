#!/usr/bin/python3
"""The kretry ui page in a real browser: headless Chromium (Debian's
chromium) loads it from `kretry ui` on a seeded `kretry dev-broker` (or the
real cluster in KRETRY_TEST_BOOTSTRAP, bbkafka.py), runs
its JavaScript, and the rendered DOM (--dump-dom) must show every seeded
DLQ row and the overview's figures and alert; once more with a token given
in the URL, as an operator opens a token-protected server; and driven as an
operator drives it (the DevTools protocol over a pipe): two rows ticked, a
dry run, the replay and its progress bar. A screenshot is kept in
ARTEFACT_DIR (ui_page.png).

usage: browser_ui.py PATH/TO/kretry ARTEFACT_DIR
Exit 0 on success, 1 on failure, 77 (skipped, with the reason) when
Chromium or kafka-python is not installed.
"""
import base64
import html.parser
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ui_seed import (SEEDED, SKIP, UI, Chrome, chain, check,  # noqa: E402
                     seed, source_messages, start_cluster)

TOKEN = "page-token-0123456789"
WIDTH, HEIGHT = 1280, 1700
TRIAGE_HEIGHT = 1900  # the failures, the history and the replay in one


def chromium_or_skip():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    print("SKIPPED: browser_ui: Chromium is not installed (Debian package "
          "chromium; scripts/install-deps.sh --test installs it)")
    sys.exit(SKIP)


def chrome(binary, profile, args, url):
    """Runs headless Chromium; the page's fetches and timers run in virtual
    time, which waits for the network, so the DOM is the loaded page's."""
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
           "--user-data-dir=" + profile, "--virtual-time-budget=20000",
           "--window-size=%d,%d" % (WIDTH, HEIGHT)] + args + [url]
    r = subprocess.run(cmd, capture_output=True, timeout=120)
    check(r.returncode == 0, "chromium exited %d: %s"
          % (r.returncode, r.stderr.decode(errors="replace")[-2000:]))
    return r.stdout.decode()


class Dom(html.parser.HTMLParser):
    """What the test reads from the rendered page: elements by id, rows by
    data-*, and the text of every cell."""

    def __init__(self, text):
        super().__init__()
        self.stack, self.rows, self.topics, self.alerts = [], [], {}, {}
        self.states, self.ids = {}, {}
        self.raw = text
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        node = {"tag": tag, "attrs": a, "text": []}
        if tag in ("br", "input", "meta", "link", "img"):
            return
        self.stack.append(node)
        if "id" in a and "data-state" in a:
            self.states[a["id"]] = a["data-state"]
        if "id" in a:
            self.ids[a["id"]] = node
        if tag == "tr" and "data-key" in a:
            self.rows.append(node)
        if tag == "tr" and "data-topic" in a:
            self.topics[a["data-topic"]] = node
        if tag == "li" and "data-rule" in a:
            self.alerts.setdefault(a["data-rule"], []).append(a["data-state"])

    def handle_endtag(self, tag):
        while self.stack:
            node = self.stack.pop()
            if self.stack:
                self.stack[-1]["text"].append(node)
            if node["tag"] == tag:
                break

    def handle_data(self, data):
        if self.stack:
            self.stack[-1]["text"].append(data)


def text(node):
    return "".join(x if isinstance(x, str) else text(x) for x in node["text"])


def cells(node):
    return [text(x) for x in node["text"]
            if not isinstance(x, str) and x["tag"] == "td"]


def check_page(dom, k, msgs, what, values=False):
    check(dom.states.get("overview") == "ready" and
          dom.states.get("browser") == "ready",
          "%s: sections not loaded: %r (error: %r)"
          % (what, dom.states, text(dom.ids["error"]) if "error" in dom.ids
             else None))
    keys = [r["attrs"]["data-key"] for r in dom.rows]
    want = ["0x" + m["key"].hex() if m["key"] == b"\x00\xffbin"
            else m["key"].decode() for m in msgs]
    check(keys == want, "%s: rows %r, expected %r" % (what, keys, want))
    first = cells(dom.rows[0])
    check(first[1:7] == ["0", "0", want[0], msgs[0]["class"], msgs[0]["code"],
                         msgs[0]["error"]], "%s: first row %r" % (what, first))
    dlq_name, src_name = k.name("orders.dlq"), k.name("orders")
    dlq = dom.topics.get(dlq_name)
    check(dlq is not None, "%s: no %s in the overview" % (what, dlq_name))
    row = cells(dlq)
    # topic, role, parts, waiting, oldest age, arrival, consume, drain
    check(row[:4] == [dlq_name, "dlq", "2", str(SEEDED)] and
          row[4].startswith("2h"), "%s: DLQ figures %r" % (what, row))
    src = cells(dom.topics[src_name])
    check(src[:4] == [src_name, "source", "2", "0"], "%s: source %r"
          % (what, src))
    check(dom.alerts.get("dlq_messages") == ["alert"] and
          dom.alerts.get("dlq_rate") == ["ok"], "%s: alerts %r"
          % (what, dom.alerts))
    check(("(values shown)" in text(dom.ids["file"])) == values,
          "%s: file line %r" % (what, text(dom.ids["file"])))
    lines = [x for x in dom.ids["chart"]["text"]
             if not isinstance(x, str) and x["tag"] == "polyline"]
    check(len(lines) == 2 and all(x["attrs"].get("points") for x in lines),
          "%s: the chart has %d lines" % (what, len(lines)))
    scale = text(dom.ids["chart-scale"])
    check(scale.startswith("peak: %d messages, 0.0 a minute" % SEEDED),
          "%s: chart scale %r" % (what, scale))
    check("end of the DLQ" in text(dom.ids["page-info"]),
          "%s: paging %r" % (what, text(dom.ids["page-info"])))


def check_detail(dom, k, m, values, what):
    check(dom.states.get("detail") == "ready",
          "%s: the linked message did not open: %r" % (what, dom.states))
    title = text(dom.ids["detail-title"])
    check(title == "%s [%d] @%d" % (k.name("orders.dlq"), m["partition"],
                                    m["offset"]),
          "%s: detail title %r" % (what, title))
    headers = text(dom.ids["detail-headers"])
    check("kretry-error-code" + m["code"] in headers and
          "trace" + "t%d" % m["i"] in headers, "%s: headers %r"
          % (what, headers))
    fields = text(dom.ids["detail-fields"])
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(m["ts"] / 1000))
    check(m["error"] in fields and "dead-lettered" + when in fields,
          "%s: fields %r (dead-lettered %s)" % (what, fields, when))
    value = text(dom.ids["value"])
    if values:
        check(value == m["value"].decode(), "%s: value %r" % (what, value))
    else:
        check(value.startswith("values are hidden") and
              m["value"].decode() not in dom.raw,
              "%s: value shown without --show-values: %r" % (what, value))


def step_replay_in_page(binary, profile, ui, k, msgs):
    """An operator's replay: tick two rows, dry run, replay, watch it end."""
    c = Chrome(binary, profile)
    try:
        c.call("Page.navigate", url=ui.url)
        c.wait('document.getElementById("browser").dataset.state === "ready"'
               ' && document.querySelectorAll("#rows tr.row").length === %d'
               % SEEDED)
        pick = [msgs[0], msgs[7]]
        for m in pick:
            c.js('document.querySelector(\'tr[data-id="%d:%d"] input\')'
                 '.click()' % (m["partition"], m["offset"]))
        check(c.js('document.getElementById("replay-what").value') == "rows"
              and c.js('document.getElementById("run").disabled'),
              "ticking rows: replay of the rows, not enabled before a dry run")
        c.js('document.getElementById("dry-run").click()')
        status = c.wait('(() => { const s = document.getElementById('
                        '"replay-status"); return s.dataset.state === "done"'
                        ' && s.textContent; })()')
        check(status == "2 messages would be replayed into %s (%d of %d "
              "read), done" % (k.name("orders"), SEEDED, SEEDED),
              "dry run: %r" % status)
        check(source_messages(k, 0) == [], "the dry run wrote nothing: "
              "the source read to its end offsets is empty")
        check(not c.js('document.getElementById("run").disabled'),
              "the dry run did not enable the replay")
        c.js('window.confirm = () => true;'
             'document.getElementById("replay-rate").value = "4";'
             'document.getElementById("run").click()')
        status = c.wait('(() => { const s = document.getElementById('
                        '"replay-status"); return s.dataset.state === "done"'
                        ' && s.textContent; })()')
        check(status == "2 messages replayed into %s (%d of %d read), "
              "done" % (k.name("orders"), SEEDED, SEEDED),
              "replay: %r" % status)
        bar = c.js('(() => { const b = document.getElementById('
                   '"replay-progress"); return [b.hidden, b.value, b.max];'
                   ' })()')
        check(bar == [False, SEEDED, SEEDED], "progress bar %r" % bar)
    finally:
        c.close()
    got = source_messages(k, 2)
    check(sorted((r.key, r.value) for r in got) ==
          sorted((m["key"], m["value"]) for m in pick),
          "replayed %r" % [(r.key, r.value) for r in got])


PAY = """\
  - name: pay
    source: %s
    group: %s
    retry: { tiers: [1s] }
    topics: { partitions: 1 }
"""


def two_topologies(path, k):
    """A topology file with the seeded orders and an empty pay."""
    with open(path) as f:
        text = f.read()
    two = path.replace(".yaml", "-two.yaml")
    with open(two, "w") as f:
        f.write(text + PAY % (k.name("pay"), k.group("pay-service")))
    return two


def step_triage(binary, profile, ui, k, msgs, shot):
    """An operator at 3 a.m., after step_replay_in_page replayed two rows:
    the failures grouped (a click sets the filters), the server's history
    drawn with axes and kept across a reload, a dry run that says how
    many matching messages lie before the resume point and includes them,
    and another topology starting with its own filters."""
    c = Chrome(binary, profile)
    try:
        c.call("Emulation.setDeviceMetricsOverride", width=WIDTH,
               height=TRIAGE_HEIGHT, deviceScaleFactor=1, mobile=False)
        c.call("Page.navigate", url=ui.url)
        c.wait('document.getElementById("failures").dataset.state === '
               '"ready"')
        groups = c.js('[...document.querySelectorAll("#groups tr.group")]'
                      '.map((r) => [r.dataset.class, r.dataset.code, '
                      'Number(r.dataset.count)])')
        want = {}
        for m in msgs:
            want[(m["class"], m["code"])] = want.get((m["class"],
                                                      m["code"]), 0) + 1
        check({(g[0], g[1]): g[2] for g in groups} == want,
              "failure groups %r, expected %r" % (groups, want))
        check([g[2] for g in groups] == sorted(want.values(), reverse=True),
              "groups not largest first: %r" % groups)
        # a click on a group sets the filters and shows its rows
        pick = [m for m in msgs if m["class"] == "exhausted" and
                m["code"] == "VALIDATION"]
        c.js('document.querySelector(\'#groups tr[data-class="exhausted"]'
             '[data-code="VALIDATION"]\').click()')
        rows = c.wait('document.getElementById("browser").dataset.state === '
                      '"ready" && document.querySelector("#filters select'
                      '[name=class]").value === "exhausted" && [...document'
                      '.querySelectorAll("#rows tr.row")].map((r) => '
                      'r.dataset.id)')
        check(sorted(rows) == sorted("%d:%d" % (m["partition"], m["offset"])
                                     for m in pick),
              "rows of the group: %r" % rows)
        check(c.js('document.querySelector("#filters input[name=code]")'
                   '.value') == "VALIDATION", "the group's code not set")
        # the replay trap: the earlier replay's progress is past them all
        c.js('document.getElementById("dry-run").click()')
        c.wait('document.getElementById("replay-status").dataset.state === '
               '"done"')
        before = c.wait('!document.getElementById("replay-before").hidden &&'
                        ' document.getElementById("replay-before").dataset'
                        '.count')
        check(before == str(len(pick)), "before the resume point: %r (%r)"
              % (before, c.js('document.getElementById("replay-before")'
                              '.textContent')))
        check(c.js('document.getElementById("run").disabled'),
              "a dry run of 0 enabled the replay")
        # the server's history, with its axes
        samples = int(c.wait('Number(document.getElementById("chart")'
                             '.dataset.samples) >= 2 && document'
                             '.getElementById("chart").dataset.samples',
                             timeout=30))
        axes = c.js('["x", "y-left", "y-right"].map((k) => document'
                    '.querySelectorAll("#chart text." + k).length)')
        check(axes == [5, 5, 5], "chart axes: %r labels" % axes)
        c.call("Page.captureScreenshot", format="png")  # settle the layout
        png = c.call("Page.captureScreenshot", format="png")["data"]
        with open(shot, "wb") as f:
            f.write(base64.b64decode(png))
        check_png(shot, TRIAGE_HEIGHT)
        # include them: a dry run from the DLQ's start counts them
        c.js('document.getElementById("include-before").click()')
        status = c.wait('(() => { const s = document.getElementById('
                        '"replay-status"); return s.dataset.state === "done"'
                        ' && document.getElementById("replay-restart")'
                        '.checked && s.textContent; })()')
        check(status.startswith("%d messages would be replayed" % len(pick))
              and c.js('document.getElementById("replay-before").hidden'),
              "including them: %r" % status)
        # a reload keeps the history (the server's, not the page's)
        c.call("Page.reload")
        again = int(c.wait('document.getElementById("overview").dataset.state'
                           ' === "ready" && Number(document.getElementById('
                           '"chart").dataset.samples) > 0 && document'
                           '.getElementById("chart").dataset.samples'))
        check(again >= samples, "after a reload the chart has %d samples, "
              "%d before" % (again, samples))
        # another topology starts with its own, empty, filters
        c.wait('document.getElementById("failures").dataset.state === '
               '"ready"')
        c.js('document.querySelector(\'#groups tr[data-class="exhausted"]'
             '[data-code="VALIDATION"]\').click()')
        c.wait('document.querySelector("#filters select[name=class]").value'
               ' === "exhausted"')
        c.js('(() => { const s = document.getElementById("topology");'
             's.value = "pay"; s.dispatchEvent(new Event("change")); })()')
        state = c.wait('document.getElementById("browser").dataset.state === '
                       '"ready" && document.getElementById("failures")'
                       '.dataset.state === "ready" && (() => { const f = '
                       'document.getElementById("filters").elements; return '
                       '[f["class"].value, f["code"].value, document'
                       '.getElementById("replay-restart").checked, document'
                       '.getElementById("dlq-name").textContent]; })()')
        check(state[:3] == ["", "", False] and
              state[3].startswith(k.name("pay.dlq")),
              "after switching to pay: filters %r" % state)
        check(c.js('document.getElementById("groups").textContent')
              .strip() == "the DLQ is empty", "pay's failures")
    finally:
        c.close()
    return samples, again


def check_png(path, height=HEIGHT):
    with open(path, "rb") as f:
        head = f.read(24)
    check(head[:8] == b"\x89PNG\r\n\x1a\n", "screenshot is not a PNG")
    w, h = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24],
                                                              "big")
    check((w, h) == (WIDTH, height) and os.path.getsize(path) > 20000,
          "screenshot %dx%d, %d bytes" % (w, h, os.path.getsize(path)))


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    cli, artefacts = sys.argv[1], sys.argv[2]
    binary = chromium_or_skip()
    try:
        import kafka  # noqa: F401
    except ImportError:
        print("SKIPPED: browser_ui: kafka-python is not installed (Debian "
              "package python3-kafka)")
        return SKIP
    d = tempfile.mkdtemp(prefix="kretry-browser-")
    broker, path = start_cluster(cli, d, chain("pay", 1, 1))
    uis = []
    try:
        msgs = seed(broker)
        uis.append(UI(cli, ["--topology", path, "--bootstrap",
                            broker.bootstrap, "--listen", "127.0.0.1:0"]))
        m = msgs[-1]
        link = "#message=%d:%d" % (m["partition"], m["offset"])
        dom = Dom(chrome(binary, os.path.join(d, "p1"), ["--dump-dom"],
                         uis[0].url + link))
        check_page(dom, broker, msgs, "loopback")
        check_detail(dom, broker, m, False, "loopback")
        print("ok: the page shows %d rows, the DLQ's figures, its alerts, "
              "and the linked message without its value" % len(dom.rows))
        os.makedirs(artefacts, exist_ok=True)
        shot = os.path.join(artefacts, "ui_page.png")
        if os.path.exists(shot):
            os.unlink(shot)
        chrome(binary, os.path.join(d, "p2"), ["--screenshot=" + shot],
               uis[0].url + link)
        check_png(shot)
        print("ok: screenshot kept in %s" % shot)
        env = dict(os.environ, KRETRY_UI_TOKEN=TOKEN)
        uis.append(UI(cli, ["--topology", path, "--bootstrap",
                            broker.bootstrap, "--listen", "127.0.0.1:0",
                            "--show-values"], env=env))
        dom = Dom(chrome(binary, os.path.join(d, "p3"), ["--dump-dom"],
                         uis[1].url + "?token=" + TOKEN + link))
        check_page(dom, broker, msgs, "with a token", values=True)
        check_detail(dom, broker, m, True, "with a token")
        print("ok: with ?token= the page loads its data with the token; "
              "--show-values shows the value")
        # last: the replay moves the DLQ's figures (its progress)
        step_replay_in_page(binary, os.path.join(d, "p4"), uis[0], broker,
                            msgs)
        print("ok: in the page, two ticked rows: a dry run counts 2, the "
              "replay writes them with its progress bar full")
        uis.append(UI(cli, ["--topology", two_topologies(path, broker),
                            "--bootstrap", broker.bootstrap,
                            "--listen", "127.0.0.1:0"]))
        triage = os.path.join(artefacts, "ui_triage.png")
        samples, again = step_triage(binary, os.path.join(d, "p5"), uis[-1],
                                     broker, msgs, triage)
        print("ok: failures grouped and a click filters; history with axes, "
              "%d samples, %d after a reload; the dry run after a replay "
              "says what lies before its resume point and includes it; "
              "another topology resets the filters; screenshot %s"
              % (samples, again, triage))
        for ui in uis:
            check(ui.stop() == 0, "kretry ui: exit status on SIGTERM")
        return 0
    except AssertionError as e:
        print("FAIL: %s" % e)
        for ui in uis:
            print("kretry ui stderr:\n" + ui.stderr_text())
        return 1
    finally:
        for ui in uis:
            ui.kill()
        broker.kill()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
