#!/usr/bin/python3
"""bench/scale_plot.py OUTDIR FILE.json...: the PNGs of bench/README.md's
"scale" section from bench/run --scale's --out files (Debian's
python3-matplotlib): scale-restore.png, scale-memory.png,
scale-throughput.png, scale-members.png, scale-idle.png. Points found in several files are all
drawn."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABEL = {"tier": "ordering=key: tier copies waiting",
         "versions": "versioning: keys in the changelog",
         "dlq": "park_key: copies in the DLQ, each a parked key",
         "dlq-few": "park_key: copies in the DLQ, 1,000 keys parked",
         "dlq-lifted": "park_key: copies in the DLQ, no key parked"}


def later(old, new, keys):
    """old's points and new's, a point measured again (same keys) new's;
    a failed point (no ratio) never replaces one."""
    new = [p for p in new if p.get("ratio") is not None]
    seen = {tuple(p.get(k) for k in keys) for p in new}
    return [p for p in old if tuple(p.get(k) for k in keys) not in seen] + new


def ratio_plot(out, name, pts_all, x, log_base, xlabel, title):
    """kretry / raw librdkafka against x, happy and retry_hop: the medians,
    and each point's range of runs where its file has them."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for sc in ("happy", "retry_hop"):
        pts = sorted((p[x], p["ratio"], [r["ratio"] for r in p.get("runs", [])])
                     for p in pts_all
                     if p["name"] == sc and p.get("ratio") is not None)
        if not pts:
            continue
        ys = [y for _, y, _ in pts]
        err = [[y - min(r or [y]) for _, y, r in pts],
               [max(r or [y]) - y for _, y, r in pts]]
        ax.errorbar([p[0] for p in pts], ys, yerr=err, fmt="o-", capsize=3,
                    label=sc if sc == "retry_hop" else
                    "happy (input prefetched: not a throughput figure)")
    if log_base:
        ax.set_xscale("log", base=log_base)
    else:
        ax.set_xticks(sorted({p[x] for p in pts_all}))
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("kretry msgs/s / raw librdkafka msgs/s")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=90)


def main():
    out, files = sys.argv[1], sys.argv[2:]
    restore, parts, thru, idle, members = [], [], [], [], []
    for f in files:
        d = json.load(open(f))
        # a point measured again: the later file's
        for p in d.get("restore", []):
            restore = [q for q in restore
                       if (q["kind"], q["n"]) != (p["kind"], p["n"])] + [p]
        parts += d.get("partitions", [])
        thru = later(thru, d.get("throughput", []), ("name", "partitions"))
        idle += d.get("idle", [])
        members = later(members, d.get("members", []),
                        ("name", "partitions", "members"))

    if restore:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for k in ("tier", "versions", "dlq", "dlq-few", "dlq-lifted"):
            pts = sorted((p["n"], p["first_ms"]) for p in restore
                         if p["kind"] == k)
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], "o-",
                        label=LABEL[k])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("size of the state (messages or keys), 8 partitions")
        ax.set_ylabel("assignment -> first message handled (ms)")
        ax.set_title("kretry: restore on assignment (median of runs, "
                     "real Kafka)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "scale-restore.png"), dpi=90)

    if restore or parts:
        fig, axs = plt.subplots(1, 2, figsize=(10, 4.2))
        for k in ("tier", "versions", "dlq", "dlq-few", "dlq-lifted"):
            pts = sorted((p["n"], p["rss_kib"] / 1024) for p in restore
                         if p["kind"] == k)
            if pts:
                axs[0].plot([x for x, _ in pts], [y for _, y in pts], "o-",
                            label=LABEL[k])
        axs[0].set_xscale("log")
        axs[0].set_xlabel("messages or keys (8 partitions)")
        axs[0].set_ylabel("RSS once the first message is handled (MiB)")
        axs[0].grid(True, which="both", alpha=0.3)
        axs[0].legend(fontsize=7)
        pts = sorted((p["partitions"], p["rss_kib"] / 1024) for p in parts)
        if pts:
            axs[1].plot([x for x, _ in pts], [y for _, y in pts], "o-")
        axs[1].set_xscale("log", base=2)
        axs[1].set_xlabel("source partitions (each with 2 tiers and a DLQ)")
        axs[1].set_ylabel("RSS of an idle kretry run (MiB)")
        axs[1].grid(True, which="both", alpha=0.3)
        fig.suptitle("kretry: resident memory (median of runs, real Kafka)")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "scale-memory.png"), dpi=90)

    if thru:
        ratio_plot(out, "scale-throughput.png", thru, "partitions", 2,
                   "partitions of every topic",
                   "kretry: throughput against partitions (median of runs)")
    if members:
        ratio_plot(out, "scale-members.png", members, "members", None,
                   "processes a side in one group (three Kafka nodes)",
                   "kretry: throughput against members (median of runs, "
                   "range)")
    if idle:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for prog, label in (("run", "kretry run --exec true"),
                            ("raw", "librdkafka alone, same topics"),
                            ("ui", "kretry ui, no browser (whole 60 s)")):
            # the ui's figures come once a minute: its whole span, not the
            # median of 20 s windows
            key = "span_cpu_pct" if prog == "ui" else "cpu_pct"
            pts = sorted((p["partitions"], p.get(key, p["cpu_pct"]))
                         for p in idle if p["program"] == prog)
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], "o-",
                        label=label)
        ax.axhline(0.1, color="grey", lw=0.8, ls="--", label="target 0.1 %")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("source partitions (each with 2 tiers and a DLQ)")
        ax.set_ylabel("CPU, % of one core")
        ax.set_title("kretry: idle CPU against partitions (real Kafka)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "scale-idle.png"), dpi=90)
    return 0


if __name__ == "__main__":
    sys.exit(main())
