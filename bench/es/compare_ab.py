#!/usr/bin/env python3
"""Puts the runs of run-es-ab.sh side by side: per system and clients, each build's median q/s, p50 and recall over
its runs, and the ratio of the second build to the first (the order of first appearance in the run folders).

    python3 bench/es/compare_ab.py OUT_DIR [--md results.md] [--png ab.png]

OUT_DIR holds one folder per run, named <i>-<build> (run-es-ab.sh), each with its es_bench.jsonl.
"""
import argparse
import json
import os
import statistics
import sys


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
    """{build: {(system, clients): {"qps": [...], "p50": [...], "recall": [...]}}} over the knn points."""
    out = {}
    for build, rows_of_runs in runs.items():
        acc = out.setdefault(build, {})
        for rows in rows_of_runs:
            for r in rows:
                if r.get("step") != "concurrent" or r.get("system") == "noop":
                    continue
                a = acc.setdefault((r["system"], r["clients"]), {"qps": [], "p50": [], "recall": []})
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


def table(runs):
    pts = points(runs)
    builds = list(pts)
    if len(builds) != 2:
        raise SystemExit("need exactly two builds, found %s" % builds)
    a, b = builds
    lines = ["| system | clients | %s q/s (runs) | %s q/s (runs) | q/s %s / %s | p50 ms %s / %s | recall %s / %s |" % (
        a, b, b, a, a, b, a, b), "|---|---|---|---|---|---|---|"]
    ratios = {"qps": [], "p50": []}
    for key in sorted(pts[a], key=lambda k: (k[0], k[1])):
        if key not in pts[b]:
            continue
        x, y = pts[a][key], pts[b][key]
        qa, qb = statistics.median(x["qps"]), statistics.median(y["qps"])
        pa, pb = statistics.median(x["p50"]), statistics.median(y["p50"])
        ra = statistics.median(x["recall"]) if x["recall"] else None
        rb = statistics.median(y["recall"]) if y["recall"] else None
        ratios["qps"].append(qb / qa)
        ratios["p50"].append(pb / pa)
        lines.append("| %s | %d | %.0f (%s) | %.0f (%s) | %.3f | %.2f / %.2f (%.3f) | %s / %s |" % (
            key[0], key[1], qa, ", ".join("%.0f" % v for v in x["qps"]), qb, ", ".join("%.0f" % v for v in y["qps"]),
            qb / qa, pa, pb, pb / pa, ra, rb))
    lines.append("")
    lines.append("Median ratio %s / %s over the points: q/s %.3f (%.3f-%.3f), p50 %.3f (%.3f-%.3f)." % (
        b, a, statistics.median(ratios["qps"]), min(ratios["qps"]), max(ratios["qps"]),
        statistics.median(ratios["p50"]), min(ratios["p50"]), max(ratios["p50"])))
    segs = segments(runs)
    lines.append("Segments searched: " + "; ".join("%s %s" % (build, ", ".join("%s %s" % (i, c) for i, c in sorted(s.items())))
                                                 for build, s in segs.items()) + ".")
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
    systems = sorted({s for s, _ in pts[builds[0]]})
    for system in systems:
        for build, style in zip(builds, ("-o", "--s")):
            keys = sorted(k for k in pts[build] if k[0] == system)
            qps = [statistics.median(pts[build][k]["qps"]) for k in keys]
            left.plot([k[1] for k in keys], qps, style, label="%s %s" % (system, build))
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
    p.add_argument("out_dir")
    p.add_argument("--md")
    p.add_argument("--png")
    a = p.parse_args()
    text, pts, builds = table(load(a.out_dir))
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text + "\n")
    if a.png:
        plot(pts, builds, a.png)


if __name__ == "__main__":
    main()
