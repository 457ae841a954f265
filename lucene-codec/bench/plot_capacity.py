"""Recall@10 against queries per second (log scale) from ByteCapacityBenchmark's CSV, as ann-benchmarks plots it:
one line per system and batch size, the exact GPU peer as points at recall 1.0.

    python3 lucene-codec/bench/plot_capacity.py capacity-N-DIMS.csv out.png
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(path, out):
    lines = defaultdict(list)
    with open(path) as f:
        for row in csv.DictReader(f):
            key = f"{row['system']}, batch {row['batch']}"
            lines[key].append((float(row["queries_per_s"]), float(row["recall_at_10"]), row["num_candidates"]))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, points in sorted(lines.items()):
        points.sort(key=lambda p: p[1])
        xs, ys, labels = zip(*points)
        ax.plot(xs, ys, marker="o", label=key)
        if key.startswith("ivf_pq"):
            for x, y, c in points:
                ax.annotate(f"nc {c}", (x, y), fontsize=7, textcoords="offset points", xytext=(3, 3))
    ax.set_xscale("log")
    ax.set_xlabel("queries per second (log)")
    ax.set_ylabel("recall@10")
    ax.set_ylim(0, 1.05)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(path.rsplit("/", 1)[-1])
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
