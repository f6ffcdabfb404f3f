#!/usr/bin/python3
"""Black-box tests of `kretry run --exec` and its child processes, on
`kretry dev-broker` (or the real cluster in KRETRY_TEST_BOOTSTRAP,
bbkafka.py); kcat produces the input.

usage: blackbox_exec.py PATH/TO/kretry MODE
  orphan   SIGKILL kretry while a handler runs: the handler is gone within
           a few seconds, not left running beside a restarted instance
  script, pipeline, compound, background
           the same with the ordinary handler shapes, where the shell forks
           (a script path whose shell runs its work in a child, `sh h |
           cat`, `sh h && echo`, a script that starts `sleep &`): every process of the handler's
           process group is gone within a few seconds
  forced   a second SIGTERM while a handler runs: the handler and what it
           started in the background get SIGTERM, then SIGKILL, and are
           gone before kretry's grace ends
  bound    one SIGTERM while two handlers outlive revoke.timeout.ms, one
           ignoring SIGTERM (and its background child too), one not: the
           stop's bound passed, both process groups get SIGTERM, the one
           that ignores it SIGKILL 2 s later; both groups gone within the
           bound, kretry exits once they are, their offsets uncommitted
  value    a 1 MiB value: the handler reads exactly KRETRY_VALUE_LEN bytes
           from stdin, and they are the value
Exit 0 on success, 1 on failure, 77 (skipped) when kcat is missing.
"""
import hashlib
import os
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bbkafka import chain, check, kcat  # noqa: E402
from blackbox_run import MOCK_X, Setup, wait_for  # noqa: E402

# Records its pid, then becomes a long sleep (the same process: kretry's
# child). A kretry that dies leaves it running for 60 s unless it is ended.
SLOW = 'echo $$ > "$LOG.pid.tmp" && mv "$LOG.pid.tmp" "$LOG.pid"\n' \
       'exec sleep 60\n'

# A background process in the handler's process group, then a wait: both
# pids recorded.
SLOW_BG = 'sleep 60 & echo "$$ $!" > "$LOG.pid.tmp" && ' \
          'mv "$LOG.pid.tmp" "$LOG.pid"\nwait\n'

# A script that reads its value, records its pid and works in a child (a
# sleep that is not exec'd): the shape of an ordinary handler script.
SCRIPT = '#!/bin/sh\ncat > /dev/null\n' \
         'echo $$ > "$LOG.pid.tmp" && mv "$LOG.pid.tmp" "$LOG.pid"\n' \
         'sleep 60\n'

# The same, starting a background job first.
SCRIPT_BG = '#!/bin/sh\ncat > /dev/null\nsleep 60 &\n' \
            'echo $$ > "$LOG.pid.tmp" && mv "$LOG.pid.tmp" "$LOG.pid"\n' \
            'sleep 60\n'

# Reads stdin, compares it with KRETRY_VALUE_LEN, logs both and a digest.
VALUE = 'n=$(tee "$LOG.value" | wc -c)\n' \
        'echo "read=$n len=${KRETRY_VALUE_LEN-unset}" >> "$LOG"\n' \
        '[ "$n" = "${KRETRY_VALUE_LEN-}" ] || exit 2\n'

# Bounds: generous for a loaded CI machine; the unfixed kretry leaves the
# handler running for its whole 60 s.
GONE_S = 5
FORCED_S = 2 + 5  # kretry's grace after SIGTERM, and room


def await_file(path, timeout):
    """The file's text once it exists (renamed into place: whole)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                return f.read()
        except FileNotFoundError:
            time.sleep(0.05)
    raise AssertionError("%s never appeared" % path)


def await_exit(pid, timeout):
    """Wait until process @pid has ended (a pidfd is readable then);
    True if it did within @timeout s, False if still running."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        p = select.poll()
        p.register(fd, select.POLLIN)
        return bool(p.poll(timeout * 1000))
    finally:
        os.close(fd)


def await_sleep(pid, timeout):
    """Wait until process @pid has become the handler's sleep: it writes its
    pid, then execs, so its command line may still be the shell's for a
    moment (seen in a CI run). True once it is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if b"sleep" in f.read():
                    return True
        except FileNotFoundError:
            return False
        time.sleep(0.01)
    return False


def kill_left(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def start_run(s, group, extra=(), cmd=None):
    """kretry run with the handler (--exec @cmd, by default `exec sh
    HANDLER`); main() kills it whatever happens."""
    b = s.broker.bootstrap
    cmd = cmd or "exec sh " + s.handler
    s.run = subprocess.Popen(
        [s.cli, "run", "--bootstrap", b, "--source", s.broker.name("orders"),
         "--group", s.broker.group(group), "--tiers", "1s",
         "--jitter", "0"] + MOCK_X + list(extra) +
        ["--exec", cmd],
        env=dict(os.environ, LOG=s.log), stderr=s.run_err)
    return s.run


def produce_one(s, value=b"v1"):
    kcat(s.broker.bootstrap, ["-P", "-X", "message.max.bytes=4000000", "-t",
                              s.broker.name("orders"), "-p", "0", "-K", ":"],
         stdin=b"k1:" + value + b"\n")


def mode_orphan(s):
    produce_one(s)
    run = start_run(s, "bb-exec-orphan")
    pids = []
    try:
        pid = int(await_file(s.log + ".pid", 30))
        pids.append(pid)
        check(await_sleep(pid, 10), "the handler (pid %d) runs" % pid)
        run.kill()  # SIGKILL: nothing of kretry runs after it
        run.wait(timeout=10)
        t0 = time.monotonic()
        gone = await_exit(pid, GONE_S)
        check(gone, "SIGKILL of kretry: its handler is gone after %.1fs "
              "(bound %ds)" % (time.monotonic() - t0, GONE_S))
    finally:
        kill_left(pids)


def group_of(pgid):
    """The pids in process group @pgid, with their command lines."""
    found = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(stat.rsplit(")", 1)[1].split()[2]) == pgid:
            found[int(d)] = cmdline
    return found


def live_group(pgid):
    """The pids of process group @pgid still running (zombies not: an
    orphan killed with its group waits for its new parent to reap it)."""
    live = []
    for pid in group_of(pgid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    live.append(pid)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return live


def await_group(pgid, sleeps, timeout):
    """The handler's process group once @sleeps of its processes are the
    handler's sleeps (they start after the pid is written)."""
    deadline = time.monotonic() + timeout
    while True:
        members = group_of(pgid)
        n = sum(1 for c in members.values() if c.startswith("sleep "))
        if n >= sleeps or time.monotonic() > deadline:
            return members
        time.sleep(0.02)


def mode_group(s, cmd, sleeps):
    """SIGKILL kretry while the handler @cmd runs; every process of its
    process group must end."""
    produce_one(s)
    run = start_run(s, "bb-exec-group", cmd=cmd)
    members = {}
    try:
        leader = int(await_file(s.log + ".pid", 30))
        pgid = os.getpgid(leader)
        check(pgid != os.getpgid(run.pid),
              "the handler runs in its own process group")
        members = await_group(pgid, sleeps, 10)
        check(sum(1 for c in members.values() if c.startswith("sleep ")) >=
              sleeps, "the handler's group runs %d sleep(s): %s" %
              (sleeps, members))
        run.kill()  # SIGKILL: nothing of kretry runs after it
        run.wait(timeout=10)
        t0 = time.monotonic()
        for pid, what in sorted(members.items()):
            gone = await_exit(pid, max(0.1, GONE_S -
                                       (time.monotonic() - t0)))
            check(gone, "SIGKILL of kretry: %s (pid %d) of the handler's "
                  "group is gone within %ds" % (what.strip(), pid, GONE_S))
    finally:
        kill_left(members)


def mode_script(s):
    os.chmod(s.handler, 0o755)
    mode_group(s, s.handler, 1)


def mode_pipeline(s):
    mode_group(s, "sh %s | cat > /dev/null" % s.handler, 1)


def mode_compound(s):
    mode_group(s, "sh %s && echo done >&2" % s.handler, 1)


def mode_background(s):
    mode_group(s, "sh " + s.handler, 2)


def mode_forced(s):
    produce_one(s)
    run = start_run(s, "bb-exec-forced")
    pids = []
    try:
        pids = [int(p) for p in await_file(s.log + ".pid", 30).split()]
        run.send_signal(signal.SIGTERM)
        time.sleep(0.2)  # two signals, as an impatient operator sends them
        run.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        rc = run.wait(timeout=FORCED_S + 10)
        check(rc == 128 + signal.SIGTERM,
              "a forced stop exits 128 + SIGTERM = %d (got %d)" %
              (128 + signal.SIGTERM, rc))
        for pid, what in zip(pids, ("the handler", "its background child")):
            gone = await_exit(pid, max(0.1, FORCED_S -
                                       (time.monotonic() - t0)))
            check(gone, "a forced stop ends %s (pid %d) within %ds" %
                  (what, pid, FORCED_S))
    finally:
        kill_left(pids)


# Two handlers that outlive the stop's revoke.timeout.ms, each with a
# background child in its process group; "stubborn" ignores SIGTERM (the
# child inherits that), "meek" does not. Both record their pids.
BOUND_H = 'v=$(cat)\n' \
          '[ "$v" = stubborn ] && trap "" TERM\n' \
          'sleep 60 & echo "$$ $!" > "$LOG.$v.tmp" && ' \
          'mv "$LOG.$v.tmp" "$LOG.$v"\n' \
          'wait\nwait\n'
BOUND_REVOKE_S = 1.5


def mode_bound(s):
    """A stop past its bound: commands still running when revoke.timeout.ms
    has passed get SIGTERM, their process groups included, SIGKILL 2 s
    later; their messages are not committed."""
    from bbkafka import committed
    kcat(s.broker.bootstrap, ["-P", "-t", s.broker.name("orders"), "-p",
                              "0", "-K", ":"],
         stdin=b"k1:stubborn\nk2:meek\n")
    run = start_run(s, "bb-exec-bound",
                    ["--concurrency", "2", "-X",
                     "revoke.timeout.ms=%d" % (BOUND_REVOKE_S * 1000)])
    pids = {}
    try:
        for v in ("stubborn", "meek"):
            pids[v] = [int(p) for p in await_file(s.log + "." + v,
                                                  30).split()]
        groups = {v: os.getpgid(p[0]) for v, p in pids.items()}
        check(groups["stubborn"] != groups["meek"] and
              os.getpgid(run.pid) not in groups.values(),
              "each handler runs in its own process group")
        for v, pgid in groups.items():
            members = await_group(pgid, 1, 10)
            check(set(pids[v]) <= set(members),
                  "%s: the shell and its background sleep run (%s)" %
                  (v, members))
        run.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        gone = {}
        for v in ("meek", "stubborn"):
            for pid in pids[v]:
                check(await_exit(pid, BOUND_REVOKE_S + 5 + 2 + 5 -
                                 (time.monotonic() - t0)),
                      "%s's process %d ends" % (v, pid))
            gone[v] = time.monotonic() - t0
        rc = run.wait(timeout=30)
        took = time.monotonic() - t0
        print("# meek gone after %.2fs, stubborn after %.2fs, kretry exit "
              "%d after %.2fs (revoke.timeout.ms %.1fs)" %
              (gone["meek"], gone["stubborn"], rc, took, BOUND_REVOKE_S))
        check(gone["meek"] >= BOUND_REVOKE_S - 0.1,
              "the handlers ran until revoke.timeout.ms passed (meek ended "
              "after %.2fs)" % gone["meek"])
        check(gone["meek"] <= BOUND_REVOKE_S + 5,
              "meek: SIGTERM within the stop's bound, revoke.timeout.ms + "
              "5 s (%.2fs)" % gone["meek"])
        check(1.8 <= gone["stubborn"] - gone["meek"] <= 2 + 2,
              "stubborn ignores SIGTERM: SIGKILL 2 s later (%.2fs after "
              "meek)" % (gone["stubborn"] - gone["meek"]))
        check(rc == 1, "a stop whose commands outlived its bound was cut "
              "short: exit 1 (got %d)" % rc)
        check(took >= gone["stubborn"] - 0.1 and
              took <= BOUND_REVOKE_S + 5 + 2 + 2,
              "kretry exits once they are gone, within the bound + 2 s "
              "(%.2fs)" % took)
        for v, pgid in groups.items():
            left = live_group(pgid)
            check(not left, "%s's process group %d is gone (%s)" %
                  (v, pgid, left))
        commit = committed(s.broker.bootstrap,
                           s.broker.group("bb-exec-bound"),
                           s.broker.name("orders"), [0])
        check(commit[0][0] <= 0 and not commit[0][1].startswith(
            "kretry-decided"),
              "their messages (offsets 0 and 1) are not committed (%s)" %
              (commit[0],))
    finally:
        kill_left([p for v in pids.values() for p in v])


def mode_value(s):
    value = bytes((i * 7 + i // 251) % 256 for i in range(1024 * 1024))
    value = value.replace(b"\n", b"n")  # one kcat message
    produce_one(s, value)
    run = start_run(s, "bb-exec-value")
    lines = wait_for(s.log, 1, 30)
    check(len(lines) == 1, "the handler ran once (%s)" % lines)
    n = len(value)
    check(lines[0] == "read=%d len=%d" % (n, n),
          "KRETRY_VALUE_LEN is what the handler read: %s (value %d bytes)" %
          (lines[0], n))
    with open(s.log + ".value", "rb") as f:
        got = f.read()
    check(hashlib.sha256(got).digest() == hashlib.sha256(value).digest(),
          "and the bytes are the value")


MODES = {"orphan": (mode_orphan, SLOW), "forced": (mode_forced, SLOW_BG),
         "bound": (mode_bound, BOUND_H),
         "value": (mode_value, VALUE), "script": (mode_script, SCRIPT),
         "pipeline": (mode_pipeline, SCRIPT),
         "compound": (mode_compound, SCRIPT),
         "background": (mode_background, SCRIPT_BG)}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in MODES:
        print(__doc__)
        return 2
    mode, handler = MODES[sys.argv.pop()]
    s = Setup(__doc__, handler, chain("orders", 1, 1))
    if s.status is not None:
        return s.status
    s.run = None
    try:
        mode(s)
    except Exception as e:
        print("FAIL:", e)
        print("--- kretry run stderr (tail) ---\n" + s.run_stderr()[-4000:])
        return 1
    finally:
        s.cleanup(s.run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
