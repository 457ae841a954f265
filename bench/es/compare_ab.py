#!/usr/bin/env python3
"""Puts the runs of run-es-ab.sh side by side: per system and clients, each build's median q/s, p50 and recall over
its runs, and the ratio of the second build to the first (the order of first appearance in the run folders).

    python3 bench/es/compare_ab.py OUT_DIR [--md results.md] [--png ab.png]
    python3 bench/es/compare_ab.py --from-log ab.log [--md results.md] [--png ab.png]

OUT_DIR holds one folder per run, named <i>-<build> (run-es-ab.sh), each with its es_bench.jsonl; or --from-log reads
the progress lines run-es-ab.sh printed (">> run i: plugin NAME", ">> SYSTEM: reusing INDEX (N docs, S segments)",
">> SYSTEM LAYOUT nc NC, C clients: Q q/s p50 P ms ... recall R"). Points are compared per system, segment count and
clients: a background merge between runs changes an index's segments, and only the same segments are compared.
"""
import argparse
import json
import os
import re
import statistics
import sys

RUN = re.compile(r">> run (\d+): plugin (\S+)")
REUSE = re.compile(r">> (\w+): (?:reusing|loading) \S+ \((\d+) docs, (\d+) segments\)")
POINT = re.compile(r">> (\w+) (\w+) nc (\d+), (\d+) clients: (\d+) q/s p50 ([\d.]+) ms p99 ([\d.]+) ms recall ([\d.]+|None)")


def load_log(path):
    """{build: [rows of each run]} from the progress lines of run-es-ab.sh (see the module's doc)."""
    runs, rows, segs = {}, None, {}
    with open(path) as f:
        for line in f:
            m = RUN.search(line)
            if m:
                rows, segs = [], {}
                runs.setdefault(m.group(2), []).append(rows)
                continue
            m = REUSE.search(line)
            if m and rows is not None:
                segs[m.group(1)] = int(m.group(3))
                rows.append({"step": "reuse", "index": "gvb_" + m.group(1), "segments": int(m.group(3))})
                continue
            m = POINT.search(line)
            if m and rows is not None:
                rows.append({"step": "concurrent", "system": m.group(1), "clients": int(m.group(4)),
                             "qps": float(m.group(5)), "p50_ms": float(m.group(6)), "p99_ms": float(m.group(7)),
                             "recall": None if m.group(8) == "None" else float(m.group(8)),
                             "segment_count": segs.get(m.group(1))})
    return runs


def load(out_dir):
    """{build: [rows of each run]}, builds in order of first appearance."""
    runs = {}
    for name in sorted(os.listdir(out_dir), key=lambda x: int(x.split("-", 1)[0]) if x.split("-", 1)[0].isdigit() else 1 << 30):
        path = os.path.join(out_dir, name, "es_bench.jsonl")
        if "-" not in name or not os.path.exists(path):
            continue
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        runs.setdefault(name.split("-", 1)[1], []).append(rows)
    return runs


def points(runs):
    """{build: {(system, segments, clients): {"qps": [...], "p50": [...], "recall": [...]}}} over the knn points."""
    out = {}
    for build, rows_of_runs in runs.items():
        acc = out.setdefault(build, {})
        for rows in rows_of_runs:
            segs = {r["index"]: r.get("segments") for r in rows if r.get("step") in ("load", "reuse")}
            for r in rows:
                if r.get("step") != "concurrent" or r.get("system") == "noop":
                    continue
                count = r.get("segment_count", segs.get("gvb_" + r["system"]))
                a = acc.setdefault((r["system"], count, r["clients"]), {"qps": [], "p50": [], "recall": []})
                a["qps"].append(r["qps"])
                a["p50"].append(r["p50_ms"])
                if r.get("recall") is not None:
                    a["recall"].append(r["recall"])
    return out


def segments(runs):
    """{build: {index: [segment counts seen, one per run]}}: both builds must have searched the same segments."""
    out = {}
    for build, rows_of_runs in runs.items():
        for rows in rows_of_runs:
            for r in rows:
                if r.get("step") in ("load", "reuse"):
                    out.setdefault(build, {}).setdefault(r["index"], []).append(r.get("segments"))
    return out


def table(runs, base=None):
    """The table, the points and the two builds: {@code base} (default: the first to run) first, the ratios the other's
    over it."""
    pts = points(runs)
    builds = list(pts)
    if len(builds) != 2:
        raise SystemExit("need exactly two builds, found %s" % builds)
    if base is not None:
        if base not in builds:
            raise SystemExit("no build named %s among %s" % (base, builds))
        builds = [base] + [x for x in builds if x != base]
    a, b = builds
    lines = ["| system | segments | clients | %s q/s (runs) | %s q/s (runs) | q/s %s / %s | p50 ms %s / %s (ratio) | recall %s / %s |" % (
        a, b, b, a, a, b, a, b), "|---|---|---|---|---|---|---|---|"]
    ratios = {"qps": [], "p50": []}
    for key in sorted(pts[a], key=lambda k: (k[0], k[1] or 0, k[2])):
        if key not in pts[b]:
            continue
        x, y = pts[a][key], pts[b][key]
        qa, qb = statistics.median(x["qps"]), statistics.median(y["qps"])
        pa, pb = statistics.median(x["p50"]), statistics.median(y["p50"])
        ra = statistics.median(x["recall"]) if x["recall"] else None
        rb = statistics.median(y["recall"]) if y["recall"] else None
        ratios["qps"].append(qb / qa)
        ratios["p50"].append(pb / pa)
        lines.append("| %s | %s | %d | %.0f (%s) | %.0f (%s) | %.3f | %.2f / %.2f (%.3f) | %s / %s |" % (
            key[0], key[1], key[2], qa, ", ".join("%.0f" % v for v in x["qps"]), qb, ", ".join("%.0f" % v for v in y["qps"]),
            qb / qa, pa, pb, pb / pa, ra, rb))
    lines.append("")
    lines.append("Median ratio %s / %s over the points: q/s %.3f (%.3f-%.3f), p50 %.3f (%.3f-%.3f)." % (
        b, a, statistics.median(ratios["qps"]), min(ratios["qps"]), max(ratios["qps"]),
        statistics.median(ratios["p50"]), min(ratios["p50"]), max(ratios["p50"])))
    segs = segments(runs)
    lines.append("Segments searched, run by run: " + "; ".join("%s %s" % (build, ", ".join("%s %s" % (i, c) for i, c in sorted(s.items())))
                                                 for build, s in segs.items()) + ".")
    unmatched = [k for b_ in builds for k in pts[b_] if any(k not in pts[o] for o in builds)]
    if unmatched:
        lines.append("Points without a counterpart at the same segments (not compared): %s." % ", ".join(
            "%s at %s segments, %d clients" % k for k in sorted(set(unmatched), key=lambda k: (k[0], k[1] or 0, k[2]))))
    return "\n".join(lines), pts, (a, b)


def plot(pts, builds, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: no plot", file=sys.stderr)
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    systems = sorted({k[0] for k in pts[builds[0]]})
    for system in systems:
        for build, style in zip(builds, ("-o", "--s")):
            keys = sorted((k for k in pts[build] if k[0] == system and all(k in pts[o] for o in builds)),
                          key=lambda k: k[2])
            qps = [statistics.median(pts[build][k]["qps"]) for k in keys]
            left.plot([k[2] for k in keys], qps, style, label="%s %s" % (system, build))
            rec = [statistics.median(pts[build][k]["recall"]) for k in keys]
            right.plot(qps, rec, style, label="%s %s" % (system, build))
    left.set_xscale("log", base=2)
    left.set_xlabel("clients")
    left.set_ylabel("q/s (median of runs)")
    right.set_xlabel("q/s")
    right.set_ylabel("recall@10")
    left.legend(fontsize=7)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir", nargs="?")
    p.add_argument("--from-log", help="the progress lines of run-es-ab.sh instead of OUT_DIR")
    p.add_argument("--base", help="the build the ratios divide by (default: the first to run)")
    p.add_argument("--md")
    p.add_argument("--png")
    a = p.parse_args()
    text, pts, builds = table(load_log(a.from_log) if a.from_log else load(a.out_dir), a.base)
    print(text, flush=True)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text + "\n")
    if a.png:
        plot(pts, builds, a.png)


if __name__ == "__main__":
    main()
