#!/usr/bin/env python3
"""Plots the benchmark results under docs/notes/results/ (and docs/results/) into PNGs beside this file (matplotlib; Debian: python3-matplotlib).

    python3 docs/plot_benchmarks.py

- exact-search-<n>-<dims>.png: left, recall@k against queries/s (ann-benchmarks style; exact search sits at
  recall 1.0, each point one batch size); right, queries/s against batch size. GPU path through the Lucene codec,
  the codec's CPU path, and PyTorch FP32 matmul + topk on the same data and GPU.
- kselect.png: k-selection throughput (GB/s read) against k, WarpSelect / BlockSelect / Tang / torch.topk.
- fashion-mnist.png: recall@10 against queries/s on fashion-mnist-784-euclidean: GPU exact search (one point
  per batch size), ivf_flat (one point per nprobe), the CPU paths, Lucene HNSW (one point per search width),
  PyTorch FP32 / TF32, and the exact kernels' FP32 / TF32-rerank rows, as ann-benchmarks draws it.
- natural-segments-ivfpq.png: queries/s against clients through Lucene, `ivf_pq` 1M x 128 at 8 natural segments
  before and after section 14's shared pass, and one segment, unfiltered and 10 % filtered (one machine, run D).
- exact-small.png: exact search of 1 to 128 queries (section 17a): queries/s against batch size, the flat scan and
  the GEMM path (device time) next to PyTorch FP32 and TF32 (wall time with transfers), 1M x 128 and 1M x 768, k = 10;
  recall is 1.0 for all (exact search), so one axis is enough.
- half-scan.png: the FP16 candidate scan (section 30, H200): left and middle, exact search of 1 to 128 queries, wall
  queries/s (transfers included) of the FP32 scan, the FP16 scan with its re-rank and the GEMM path next to PyTorch
  FP32 / TF32 (wall too), 1M x 128 and 1M x 768, k = 10; right, Elasticsearch 1M x 768 q/s against clients: `flat`
  with and without the FP16 copy, `dense_vector` HNSW (natural segments) and the knn ceiling.
- half-table.png: Elasticsearch 1M x 128 `flat`, natural and one segment (section 31): the FP32 table, the FP16 half
  table, two passes pipelined, each with its paired knn ceiling.
- chunk-candidates.png: the FP16 path's chunks keeping their share of the candidates (section 32): left and middle,
  the captured pass (wall) and the device time at 1 to 16 queries, k = 100, before and after, next to PyTorch FP32 /
  TF32 (wall, same run), 1M x 128 and 1M x 768; right, Elasticsearch 1M x 128 q/s against clients, one and natural
  segments, with each run's paired knn ceiling.
- ivfpq-scale.png: recall@10 against queries/s, `ivf_pq` at scale (section 23: 10M x 128 and 2M x 768, nprobe 8,
  one point per num_candidates), batch 10k and one query at a time, next to the exact GPU search of the same JVM and
  PyTorch FP32 / TF32 on the same data (session 17, section 22b / 22c: the peer of another run, as marked).
- graph-merge.png: force-merges of graph segments on the build machine's 2 cores (section 26): recall@10 against
  seconds for Lucene HNSW's merge, our rebuild and our merge from the segments' graphs.
- ivf-build.png: Fashion-MNIST build times (section 24a): Lucene HNSW on all cores, and each of our types' whole build
  (indexing + flush + force-merge) and writer's train + encode + write, GPU and CPU, with issue 8's bar (HNSW / 20).
"""
import csv
import json
import os
import re
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
results = os.path.join(here, "results")
# the runs that docs/RESULTS.md cites stay in docs/results/; the notebook's others moved here with it
cited_results = os.path.join(here, os.pardir, "results")


def result_path(*parts):
    """The run or file under docs/notes/results/, else under docs/results/ (where RESULTS.md's runs are)."""
    notes = os.path.join(results, *parts)
    return notes if os.path.exists(notes) else os.path.join(cited_results, *parts)


def rows(name):
    with open(result_path(name)) as f:
        return list(csv.DictReader(f))


def exact_search(n, dims):
    ours = rows(f"flat-{n}-{dims}.csv")
    torch = rows(f"torch-flat-{n}-{dims}.csv")
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for k, marker in (("10", "o"), ("100", "s")):
        for label, data, color in (("GPU (codec)", ours, "tab:green"), ("PyTorch FP32", torch, "tab:orange")):
            path = "gpu-codec" if data is ours else "torch-fp32"
            pts = [r for r in data if r["k"] == k and r["path"] == path and r["queries_per_s"] != "nan"]
            batches = [int(r["batch"]) for r in pts]
            qps = [float(r["queries_per_s"]) for r in pts]
            recall = [float(r.get("recall_vs_cpu") or 1.0) if r.get("recall_vs_cpu", "nan") != "nan" else 1.0 for r in pts]
            right.plot(batches, qps, marker=marker, color=color, label=f"{label} k={k}")
            left.scatter(qps, recall, marker=marker, color=color, label=f"{label} k={k}")
        cpu = [r for r in ours if r["k"] == k and r["path"] == "cpu-codec"]
        for r in cpu:
            right.scatter([int(r["batch"])], [float(r["queries_per_s"])], marker=marker, color="tab:blue",
                          label=f"CPU path (codec, 1 thread) k={k}")
            left.scatter([float(r["queries_per_s"])], [1.0], marker=marker, color="tab:blue",
                         label=f"CPU path (codec, 1 thread) k={k}")
    right.set_xscale("log"); right.set_yscale("log")
    right.set_xlabel("queries per batch"); right.set_ylabel("queries/s"); right.grid(True, which="both", alpha=0.3)
    right.set_title(f"exact k-NN, {n // 1000}k x {dims}, H100")
    left.set_xscale("log"); left.set_ylim(0.9, 1.01)
    left.set_xlabel("queries/s"); left.set_ylabel("recall@k"); left.grid(True, which="both", alpha=0.3)
    left.set_title("recall vs queries/s (exact search: recall 1.0)")
    handles, labels = right.get_legend_handles_labels()
    right.legend(handles, labels, fontsize=7, loc="lower right")
    fig.tight_layout()
    out = os.path.join(here, f"exact-search-{n}-{dims}.png")
    fig.savefig(out, dpi=110)
    print("wrote", out)


def kselect():
    ours = rows("select_bench.csv")
    # the copy bandwidth measured in the same program: gbps / fraction_of_copy_bw of any row
    copy = sorted(float(x["gbps"]) / float(x["fraction_of_copy_bw"]) for x in ours if float(x["fraction_of_copy_bw"]) > 0.1)
    copy = copy[len(copy) // 2]
    torch = {}
    with open(result_path("torch_peers.txt")) as f:
        for line in f:
            m = re.match(r"^(\d+)x(\d+)\s+(\d+)\s+(\d+)\s+\(", line)
            if m:
                torch[(m.group(1), m.group(2), m.group(3))] = float(m.group(4))
    shapes = [("1", "100000000"), ("1000", "100000"), ("10000", "10000")]
    fig, axes = plt.subplots(1, len(shapes), figsize=(14, 4), sharey=True)
    for ax, (r, length) in zip(axes, shapes):
        for algo, color in (("WARP_SELECT", "tab:green"), ("BLOCK_SELECT", "tab:blue"), ("TANG", "tab:purple")):
            pts = sorted((int(x["k"]), float(x["gbps"])) for x in ours if x["rows"] == r and x["len"] == length and x["algorithm"] == algo)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=color, label=algo)
        tp = sorted((int(k), v) for (rr, ll, k), v in torch.items() if rr == r and ll == length)
        ax.plot([p[0] for p in tp], [p[1] for p in tp], marker="s", color="tab:orange", label="torch.topk")
        ax.axhline(copy * 0.55, color="grey", linestyle=":", label="55% of copy bandwidth (Faiss paper)")
        ax.set_xscale("log"); ax.set_yscale("log"); ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"{r} x {length} floats"); ax.set_xlabel("k")
    axes[0].set_ylabel("GB/s read (H100)")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    out = os.path.join(here, "kselect.png")
    fig.savefig(out, dpi=110)
    print("wrote", out)


# the Fashion-MNIST run the plot shows (a directory under docs/results/)
FMNIST_RUN = "fmnist-2026-11-28-s22"


def fashion_mnist():
    """The latest Fashion-MNIST run (FashionMnistBenchmark + torch_fmnist.py in one call), plus the exact-search
    kernels' FP32 / TF32-rerank rows of ExactSearchBench tf32 (the same data; kernel level, wall clock)."""
    run = result_path(FMNIST_RUN)
    if not os.path.exists(os.path.join(run, "fashion-mnist.csv")):
        return
    data = rows(f"{FMNIST_RUN}/fashion-mnist.csv") + rows(f"{FMNIST_RUN}/torch-fmnist.csv")
    tf32 = result_path("tf32", "exact_tf32.csv")
    if os.path.exists(tf32):
        for r in rows("tf32/exact_tf32.csv"):
            if r.get("k") == "10":
                data.append({"system": "kernel-exact-" + r["precision"].lower(), "parameter": "batch=10000",
                             "recall": r.get("agree", "1.0"), "queries_per_s": r["queries_per_s_wall"]})
    colors = {"gpu-exact": "tab:green", "cpu-exact-1-thread": "tab:blue", "gpu-ivf-flat": "tab:red",
              "gpu-ivf-flat-batch-1": "tab:pink", "cpu-ivf-flat-1-thread": "tab:purple",
              "torch-fp32": "tab:gray", "torch-tf32": "black", "kernel-exact-fp32": "tab:olive",
              "kernel-exact-tf32_rerank": "tab:cyan", "gpu-ivf-pq": "tab:brown", "gpu-ivf-pq-batch-1": "peru",
              "cpu-ivf-pq-1-thread": "rosybrown", "gpu-graph": "darkviolet",
              "gpu-graph-batch-1": "violet", "cpu-graph-16-threads": "indigo",
              "lucene-hnsw-16-threads": "tab:orange"}
    # left: every point; right: the high-recall corner where the systems compete (points left of 0.97 off the axis)
    fig, axes = plt.subplots(1, 2, figsize=(15, 6))
    for ax, zoom in zip(axes, (False, True)):
        for system in dict.fromkeys(r["system"] for r in data):
            pts = [r for r in data if r["system"] == system and (not zoom or float(r["recall"]) >= 0.97)]
            if not pts:
                continue
            x = [float(r["recall"]) for r in pts]
            y = [float(r["queries_per_s"]) for r in pts]
            color = colors.get(system, "tab:orange")
            ax.plot(x, y, marker="o", color=color, label=system, linestyle="-" if len(pts) > 1 else "none")
            if zoom:
                for r, xi, yi in zip(pts, x, y):
                    ax.annotate(r["parameter"], (xi, yi), fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_yscale("log")
        ax.set_xlabel("recall@10")
        ax.set_ylabel("queries/s")
        ax.set_title("recall >= 0.97" if zoom else "fashion-mnist-784-euclidean, k=10 (H100; CPU rows 16 threads)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    out = os.path.join(here, "fashion-mnist.png")
    fig.savefig(out, dpi=110)
    print("wrote", out)


def concurrent_rows(name):
    """The `ivf_pq,...` rows of a ConcurrentSearchBenchmark log: (layout, filter, clients, q/s)."""
    out = []
    with open(result_path(name)) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) > 6 and fields[0] == "ivf_pq":
                out.append((fields[2], fields[4], int(fields[5]), float(fields[6])))
    return out


def es_concurrent(run, system, segments=None):
    """The `concurrent` points of one system in a bench_es.py run's es_bench.jsonl (one layout, when given)."""
    with open(result_path(run, "es_bench.jsonl")) as f:
        pts = [json.loads(line) for line in f if line.startswith("{")]
    return [p for p in pts if p.get("step") == "concurrent" and p.get("system") == system
            and (segments is None or p.get("segments") == segments)]


def natural_segments():
    old = concurrent_rows("shared-selection-s9/concurrent-natural-final-old.log")
    new = concurrent_rows("shared-selection-s9/concurrent-natural-final-new.log")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, filt in zip(axes, ("none", "10%")):
        for label, data, layout, style in (("8 natural segments, before", old, "natural", "o--"),
                                           ("8 natural segments, shared pass", new, "natural", "o-"),
                                           ("one segment", new, "merged", "s:")):
            pts = sorted((c, q) for (lay, f, c, q) in data if lay == layout and f == filt)
            ax.plot([c for c, _ in pts], [q for _, q in pts], style, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("clients (concurrent single-query searches)")
        ax.set_ylabel("queries/s")
        ax.set_title("ivf_pq 1M x 128, nc 100, " + ("no filter" if filt == "none" else "10 % filter"))
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    out = os.path.join(here, "natural-segments-ivfpq.png")
    fig.savefig(out, dpi=110)
    print("wrote", out)


def exact_small():
    ours = rows("exact-small-s12/exact_small.csv")
    torch = rows("exact-small-s12/torch_exact.csv")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, dims in zip(axes, ("128", "768")):
        for strategy, color in (("SCAN", "tab:green"), ("GEMM", "tab:purple")):
            pts = [r for r in ours if r["dims"] == dims and r["k"] == "10" and r["strategy"] == strategy]
            ax.plot([int(r["batch"]) for r in pts], [float(r["queries_per_s_device"]) for r in pts], marker="o",
                    color=color, label=f"ours: {strategy.lower()} (device time)")
        for precision, color in (("fp32", "tab:orange"), ("tf32", "tab:red")):
            pts = [r for r in torch if r["dims"] == dims and r["k"] == "10" and r["precision"] == precision]
            ax.plot([int(r["batch"]) for r in pts], [float(r["queries_per_s"]) for r in pts], marker="s",
                    color=color, linestyle="--", label=f"PyTorch {precision.upper()} matmul + topk (wall)")
        ax.set_xscale("log", base=2); ax.set_yscale("log")
        ax.set_xlabel("queries per batch"); ax.set_ylabel("queries/s (recall 1.0)")
        ax.set_title(f"exact k-NN, 1M x {dims}, k = 10, H100"); ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    out = os.path.join(here, "exact-small.png")
    fig.savefig(out, dpi=110)
    print("wrote", out)


def half_scan():
    base = "half-scan-s23"
    ours = rows(base + "/small-first-run/exact_small.csv")
    torch = []
    with open(result_path(base, "torch-peer-first-run.log")) as f:
        for line in f:
            m = re.match(r"1000kx(\d+)\s+(\d+)\s+(\d+)\s+(fp32|tf32)\s+([\d.]+)\s+(\d+)", line)
            if m:
                torch.append({"dims": m[1], "batch": int(m[2]), "k": m[3], "precision": m[4], "qps": float(m[6])})
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.5))
    for ax, dims in zip(axes, ("128", "768")):
        for strategy, color, label in (("SCAN", "tab:green", "FP32 scan"), ("HALF_SCAN", "tab:blue", "FP16 scan + "
                                       "FP32 re-rank"), ("GEMM", "tab:purple", "GEMM path")):
            pts = [r for r in ours if r["dims"] == dims and r["k"] == "10" and r["strategy"] == strategy]
            ax.plot([int(r["batch"]) for r in pts], [int(r["batch"]) / float(r["wall_ms"]) * 1e3 for r in pts],
                    marker="o", color=color, label=f"ours: {label}")
        for precision, color in (("fp32", "tab:orange"), ("tf32", "tab:red")):
            pts = [r for r in torch if r["dims"] == dims and r["k"] == "10" and r["precision"] == precision]
            ax.plot([r["batch"] for r in pts], [r["qps"] for r in pts], marker="s", color=color, linestyle="--",
                    label=f"PyTorch {precision.upper()} matmul + topk")
        ax.set_xscale("log", base=2); ax.set_yscale("log")
        ax.set_xlabel("queries per batch"); ax.set_ylabel("queries/s, wall with transfers (recall 1.0)")
        ax.set_title(f"exact k-NN, 1M x {dims}, k = 10, H200"); ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    ax = axes[2]
    runs = (("es-768-half", "gpu", "tab:blue", "gpu_vector flat, FP16 scan (one segment)"),
            ("es-768-fp32", "gpu", "tab:green", "gpu_vector flat, FP32 scan (one segment)"),
            ("es-768-hnsw", "hnsw", "tab:orange", "dense_vector HNSW (natural segments)"),
            ("es-768-half", "ceiling", "tab:gray", "knn ceiling (HNSW on 2,000 vectors)"))
    for run, system, color, label in runs:
        pts = es_concurrent(os.path.join(base, run), system)
        ax.plot([p["clients"] for p in pts], [p["qps"] for p in pts], marker="o", color=color, label=label)
    ax.set_xscale("log", base=2); ax.set_yscale("log")
    ax.set_xlabel("concurrent clients"); ax.set_ylabel("queries/s (knn, k = 10)")
    ax.set_title("Elasticsearch, 1M x 768, H200"); ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=7)
    fig.tight_layout()
    out = os.path.join(here, "half-scan.png")
    fig.savefig(out, dpi=110)
    print("wrote", out)


def half_table():
    """Section 31: Elasticsearch 1M x 128 flat, natural and one segment, the FP16 table and the pipelined passes."""
    base = "half-table-s24"
    runs = (("es-128-fp32", "tab:green", "FP32 scan + FP32 table (9b)"),
            ("es-128-half-passes1", "tab:blue", "FP16 copy + half table (12c)"),
            ("es-128-half-passes2", "tab:purple", "FP16 + half table, two passes, pipelined (12d)"))
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    for ax, segments in zip(axes, ("one", "natural")):
        for run, color, label in runs:
            gpu = es_concurrent(os.path.join(base, run), "gpu", segments)
            ax.plot([p["clients"] for p in gpu], [p["qps"] for p in gpu], marker="o", color=color, label=label)
            ax.plot([p["clients"] for p in gpu], [p["ceiling_qps"] for p in gpu], marker="x", color=color,
                    linestyle=":", alpha=0.6, label=f"its paired knn ceiling")
        ax.set_xscale("log", base=2); ax.set_yscale("log")
        ax.set_xlabel("concurrent clients"); ax.set_ylabel("queries/s (exact knn, k = 10, recall 1.0)")
        ax.set_title(f"Elasticsearch, gpu_vector flat 1M x 128, {segments} segment(s), H200")
        ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=7)
    fig.tight_layout()
    out = os.path.join(here, "half-table.png")
    fig.savefig(out, dpi=110)
    print("wrote", out)


def log_rows(name, pattern, value):
    """The lines of a results log that start `NkxDIMS batch k label` and match `pattern` (those four its first groups):
    {(dims, batch, k, label): value(match)}."""
    out = {}
    with open(result_path(name)) as f:
        for line in f:
            m = re.match(pattern, line)
            if m:
                out[(int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4))] = value(m)
    return out


def torch_log(name):
    """The `n x dims batch k prec median_ms ...` rows of a torch_exact.py log: {(dims, batch, k, prec): ms}."""
    return log_rows(name, r"\d+kx(\d+)\s+(\d+)\s+(\d+)\s+(fp32|tf32)\s+([\d.]+)", lambda m: float(m.group(5)))


def half_passes_axes(ax, peer, dims, peer_run, legend_size):
    """An FP16-passes panel's PyTorch peer at k = 100 ({(dims, batch, k, prec): ms}, run `peer_run`), scales, labels."""
    for prec, color in (("fp32", "tab:orange"), ("tf32", "tab:red")):
        batches = [b for b in (1, 2, 4, 8, 16) if (dims, b, 100, prec) in peer]
        ax.plot(batches, [peer[(dims, b, 100, prec)] for b in batches], marker="s", color=color,
                label=f"PyTorch {prec.upper()} matmul + topk, wall ({peer_run})")
    ax.set_xscale("log", base=2); ax.set_ylim(bottom=0)
    ax.set_xlabel("queries in the pass"); ax.set_ylabel("ms (exact, k = 100, recall 1.0)")
    ax.set_title(f"FP16 path, 1M x {dims}, H200"); ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=legend_size)


def chunk_candidates():
    """Section 32: the FP16 path's chunks keeping their share of the candidates; Elasticsearch 1M x 128 with it."""
    base = "chunk-candidates-s25"
    ours = rows(os.path.join(base, "final", "half_passes.csv"))
    peer = torch_log(os.path.join(base, "final", "torch_exact_passes.log"))
    fig, axes = plt.subplots(1, 3, figsize=(18, 4.8))
    for ax, dims in zip(axes[:2], (128, 768)):
        for keep, color, label in (("k'", "tab:green", "chunks keep k' (before)"),
                                   ("fewer", "tab:blue", "chunks keep their share (now)")):
            pts = [r for r in ours if int(r["dims"]) == dims and r["k"] == "100" and r["chunks_keep"] == keep]
            batches = [int(r["batch"]) for r in pts]
            ax.plot(batches, [float(r["pass_wall_ms"]) for r in pts], marker="o", color=color,
                    label=label + ": captured pass, wall")
            ax.plot(batches, [float(r["device_ms"]) for r in pts], marker=".", linestyle=":", color=color,
                    label=label + ": device")
        half_passes_axes(ax, peer, dims, "same run", 7)
    ax = axes[2]
    runs = (("es-ab-kprime", "tab:green", "chunks keep k' (machine A)"),
            ("es-ab-fewer", "tab:blue", "chunks keep their share (machine A)"),
            ("es-stable-shapes", "tab:purple", "+ passes of stable shapes (machine B)"))
    for run, color, label in runs:
        es_gpu_lines(ax, os.path.join(base, run), color, label, "its paired knn ceiling")
    es_clients_axes(ax, "Elasticsearch, gpu_vector flat 1M x 128, H200")
    save(fig, "chunk-candidates.png")


def es_gpu_lines(ax, run, color, label, ceiling_label):
    """A bench_es.py run's gpu_vector q/s against clients, one segment and natural, and its paired knn ceiling."""
    for segments, style in (("one", "-"), ("natural", "--")):
        gpu = es_concurrent(run, "gpu", segments)
        ax.plot([p["clients"] for p in gpu], [p["qps"] for p in gpu], marker="o", linestyle=style, color=color,
                label=f"{label}, {segments} segment(s)")
    ceiling = es_concurrent(run, "gpu", "one")
    ax.plot([p["clients"] for p in ceiling], [p["ceiling_qps"] for p in ceiling], marker="x", linestyle=":",
            color=color, alpha=0.6, label=ceiling_label)


def es_clients_axes(ax, title):
    """Log-log q/s against concurrent clients, titled, with a small legend."""
    ax.set_xscale("log", base=2); ax.set_yscale("log")
    ax.set_xlabel("concurrent clients"); ax.set_ylabel("queries/s (exact knn, k = 10, recall 1.0)")
    ax.set_title(title); ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6)


def save(fig, name):
    """Lays out and writes a figure next to this script."""
    fig.tight_layout()
    out = os.path.join(here, name)
    fig.savefig(out, dpi=110)
    print("wrote", out)


def half_passes_log(name):
    """The rows of an ExactSearchBench passes log: {(dims, batch, k, chunks_keep): (device_ms, pass_wall_ms)}."""
    return log_rows(name, r"\d+kx(\d+)\s+(\d+)\s+(\d+)\s+(k'|fewer)\s+([\d.]+)\s+[\d.]+\s+([\d.]+)",
                    lambda m: (float(m.group(5)), float(m.group(6))))


def radix_merges():
    """Section 33: the chunks' candidates merged by the one-block radix selection; Elasticsearch's natural segments."""
    base = "radix-merges-s26"
    runs = (("passes-blockselect", "tab:green", "BlockSelect merge (before), A/B call"),
            ("passes-radix-ab", "tab:blue", "radix merge (now), A/B call"),
            ("passes-radix", "tab:purple", "radix merge (now), another machine"))
    peer = torch_log(os.path.join(base, "passes-radix", "torch_exact_passes.log"))
    fig, axes = plt.subplots(1, 3, figsize=(18, 4.8))
    for ax, dims in zip(axes[:2], (128, 768)):
        for run, color, label in runs:
            ours = half_passes_log(os.path.join(base, run, "half_passes.log"))
            batches = [b for b in (1, 2, 4, 8, 16) if (dims, b, 100, "fewer") in ours]
            ax.plot(batches, [ours[(dims, b, 100, "fewer")][1] for b in batches], marker="o", color=color,
                    label=label + ": captured pass, wall")
            ax.plot(batches, [ours[(dims, b, 100, "fewer")][0] for b in batches], marker=".", linestyle=":",
                    color=color, label=label + ": device")
        half_passes_axes(ax, peer, dims, "run of the purple line", 6)
    ax = axes[2]
    for run, color, label in (("es-ab-blockselect", "tab:green", "BlockSelect merge"),
                              ("es-ab-radix", "tab:blue", "radix merge")):
        es_gpu_lines(ax, os.path.join(base, run), color, "gpu_vector flat, " + label,
                     "its paired knn ceiling (one segment)")
    for segments, style in (("one", ":"), ("natural", "-.")):
        ceiling = es_concurrent(os.path.join(base, "ceiling-natural-profile"), "ceiling", segments)
        ax.plot([p["clients"] for p in ceiling], [p["qps"] for p in ceiling], marker="^", linestyle=style,
                color="grey", label=f"knn ceiling at {'8 segments' if segments == 'natural' else 'one'} (another node)")
    es_clients_axes(ax, "Elasticsearch 1M x 128, H200 (one machine; grey: another)")
    save(fig, "radix-merges.png")


def scan_loads():
    """Section 34: the half scan's norms loaded with its rows (A/B); Elasticsearch's own knn ceiling on a 1M-doc index."""
    base = "scan-loads-s27"
    fig, axes = plt.subplots(1, 3, figsize=(18, 4.8))
    ax = axes[0]
    for arm, color, label in (("old", "tab:green", "norms loaded after the products (before)"),
                              ("new", "tab:blue", "norms loaded with the rows (now)")):
        runs = [half_passes_log(os.path.join(base, "ab-norms-hoisted", f"passes-{arm}-{i}.log"))
                for i in ((1, 3, 5) if arm == "old" else (2, 4, 6))]
        for k, style in ((10, "-"), (100, "--")):
            batches = [b for b in (1, 2, 4, 8, 16) if (128, b, k, "fewer") in runs[0]]
            ax.plot(batches, [statistics.median(r[(128, b, k, "fewer")][0] for r in runs) for b in batches],
                    marker="o", linestyle=style, color=color, label=f"{label}, k = {k}: device ms, median of 3")
    ax.set_xscale("log", base=2); ax.set_xlabel("queries in the pass"); ax.set_ylabel("ms")
    ax.set_title("FP16 pass over 1M x 128, one H200, interleaved A/B"); ax.grid(True, alpha=0.3); ax.legend(fontsize=6)
    for ax, run in zip(axes[1:], ("es-bigceiling-run1", "es-bigceiling-run2")):
        path = os.path.join(base, run)
        for system, color, label in (("bigceiling", "grey", "knn ceiling of the 1M-doc index (2,000 vectors)"),
                                     ("gpu", "tab:blue", "gpu_vector flat, exact")):
            for segments, style in (("one", "-"), ("natural", "--")):
                pts = es_concurrent(path, system, segments)
                ax.plot([p["clients"] for p in pts], [p["qps"] for p in pts], marker="o", linestyle=style,
                        color=color, label=f"{label}, {segments} segment(s)")
        tiny = es_concurrent(path, "gpu", "one")
        ax.plot([p["clients"] for p in tiny], [p["ceiling_qps"] for p in tiny], marker="x", linestyle=":",
                color="black", alpha=0.6, label="knn ceiling, 2,000-doc index (paired)")
        es_clients_axes(ax, f"Elasticsearch 1M x 128, H200, {run[-4:]}")
    save(fig, "scan-loads.png")


def ivfpq_scale():
    sets = (("10M x 128", "ivfpq-s18/typical-row/m10-p8/ivfpq-scale-10000000-128.csv",
             "ivfpq-s17/scale-10m-torch/torch-scale-10000000-128.csv"),
            ("2M x 768", "ivfpq-s18/typical-row/d768-p8/ivfpq-scale-2000000-768.csv",
             "ivfpq-s17/scale-2m768-torch/torch-scale-2000000-768.csv"))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, (name, ours_csv, torch_csv) in zip(axes, sets):
        ours = rows(ours_csv)
        for batch, color in (("10000", "tab:green"), ("1", "tab:blue")):
            pts = [r for r in ours if r["system"] == "ivf_pq-gpu" and r["batch"] == batch]
            pts.sort(key=lambda r: float(r["recall_at_10"]))
            ax.plot([float(r["queries_per_s"]) for r in pts], [float(r["recall_at_10"]) for r in pts], marker="o",
                    color=color, label=f"ivf_pq, batch {batch} (nprobe 8, one point per num_candidates)")
            exact = [r for r in ours if r["system"].startswith("exact-gpu") and r["batch"] == batch]
            best = max(exact, key=lambda r: float(r["queries_per_s"]))
            ax.scatter([float(best["queries_per_s"])], [float(best["recall_at_10"])], marker="*", s=120, color=color,
                       label=f"our exact GPU search, batch {batch} ({best['system'][len('exact-gpu-'):]})")
            ax.scatter([20 * float(best["queries_per_s"])], [0.95], marker="|", s=300, color=color,
                       label=f"issue 8's bar: 20x exact at recall 0.95, batch {batch}")
        for r in rows(torch_csv):
            ax.scatter([float(r["queries_per_s"])], [float(r["recall_vs_fp32"])], marker="s", color="tab:orange"
                       if r["system"] == "torch-fp32" else "tab:red",
                       label=f"PyTorch {r['system'][6:].upper()} batch 10k (session 17)")
        ax.set_xscale("log"); ax.set_ylim(0.9, 1.005)
        ax.set_xlabel("queries/s"); ax.set_ylabel("recall@10")
        ax.set_title(f"ivf_pq, {name} clustered, k = 10, H100"); ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, loc="lower left")
    fig.tight_layout()
    out = os.path.join(here, "ivfpq-scale.png")
    fig.savefig(out, dpi=110)
    print("wrote", out)


def build_bars(csv, png, bar):
    """Whole builds and the writer's own time against HNSW / 20 (IndexBuildBenchmark, formerly IvfBuildBenchmark)."""
    data = rows(csv)
    hnsw = float(next(r for r in data if r["system"] == "lucene-hnsw")["build_s"])
    labels, whole, writer = [], [], []
    for r in data:
        labels.append(r["system"] + "\n" + r["path"])
        whole.append(float(r["build_s"]))
        writer.append(float(r["writer_s"]) if r["writer_s"] else 0)
    fig, ax = plt.subplots(figsize=(11, 4.5))
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], whole, width=0.4, color="tab:gray", label="whole build: indexing + flush + force-merge")
    ax.bar([i + 0.2 for i in x], writer, width=0.4, color="tab:green",
           label="the writer's build (train + encode, or the graph's steps) + write")
    ax.axhline(hnsw / 20, color="tab:red", linestyle="--", label=f"{bar}: HNSW / 20 = {hnsw / 20:.3f} s")
    ax.set_xticks(list(x)); ax.set_xticklabels(labels, fontsize=8)
    ax.set_yscale("log"); ax.set_ylabel("seconds (medians)")
    ax.set_title("Fashion-MNIST 60k x 784 builds, H100 + 16 cores (HNSW: 16 indexing + 16 merge threads)")
    ax.grid(True, axis="y", which="both", alpha=0.3); ax.legend(fontsize=8)
    fig.tight_layout()
    out = os.path.join(here, png)
    fig.savefig(out, dpi=110)
    print("wrote", out)


def ivf_build():
    build_bars("ivf-build-s19/ivf-build.csv", "ivf-build.png", "issue 8's bar")


def index_build():
    build_bars("graph-build-s20/step4-double-buffered/index-build.csv", "index-build.png", "issues 8 and 9's bar")


def graph_merge(results="graph-merge-s21", title="merging graph segments on 2 cores (no GPU)",
                png="graph-merge.png",
                sets=(("s4", "4 x 15,000"), ("s10", "10 x 6,000"), ("mixed", "45,000 + 5 x 3,000 flat"))):
    """Force-merges of a graph field's segments (section 26): recall@10 against the force-merge's seconds, per merge
    (Lucene HNSW's merge of the same documents' HNSW segments, our rebuild, our merge from the segments' graphs), one
    colour per set of segments; filled: num_candidates 16 (our search width 16, HNSW's beam 16), hollow: 64. The
    2-core build machine by default (26a); the H100 machine's run, where the rebuild's k-NN step is the GPU's, with
    graph_merge_gpu (26d)."""
    fig, ax = plt.subplots(figsize=(9, 5.5))
    markers = {"lucene-hnsw": "s", "rebuild": "o"}
    for (name, label), colour in zip(sets, ("tab:blue", "tab:orange", "tab:green", "tab:red")):
        for r in rows(f"{results}/{name}/graph-merge.csv"):
            arm, x = r["arm"], float(r["force_merge_s"])
            y16, y64 = float(r["recall@10_w16"]), float(r["recall@10_w64"])
            m = markers.get(arm, "^")
            ax.plot([x, x], [y16, y64], color=colour, alpha=0.4, linewidth=1)
            ax.scatter(x, y16, color=colour, marker=m, s=60)
            ax.scatter(x, y64, facecolors="none", edgecolors=colour, marker=m, s=60)
            ax.annotate(arm, (x, y16), fontsize=7, xytext=(5, -10), textcoords="offset points")
        ax.scatter([], [], color=colour, label=label)
    ax.set_xscale("log"); ax.set_xlabel("force-merge seconds (median of the merges; lower is better)")
    ax.set_ylabel("recall@10 of the merged segment (filled: 16 candidates, hollow: 64)")
    ax.set_title("Fashion-MNIST 60k x 784: " + title)
    ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8, title="segments merged", title_fontsize=8)
    fig.tight_layout()
    out = os.path.join(here, png)
    fig.savefig(out, dpi=110)
    print("wrote", out)


def graph_merge_gpu():
    """Section 26d: the same merges on the H100 machine (rebuild on the GPU, the others on 16 cores)."""
    graph_merge("graph-merge-s22-h100", "merges on the H100 machine\n(rebuild: k-NN on the GPU; "
                "the others on 16 cores)", "graph-merge-h100.png",
                (("s4", "4 x 15,000"), ("s10", "10 x 6,000"), ("mixed-r2", "45,000 + 5 x 3,000 flat"),
                 ("single-deleted", "one 40,000, 30 % deleted")))


if __name__ == "__main__":
    exact_search(1000000, 128)
    exact_search(1000000, 768)
    kselect()
    fashion_mnist()
    natural_segments()
    exact_small()
    half_scan()
    half_table()
    chunk_candidates()
    radix_merges()
    scan_loads()
    ivfpq_scale()
    ivf_build()
    index_build()
    graph_merge()
    graph_merge_gpu()
