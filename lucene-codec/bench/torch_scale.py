#!/usr/bin/env python3
"""PyTorch exact k-NN (k = 10, squared L2 as ||x||^2 - 2 x.q + ||q||^2, matmul + topk), FP32 and TF32, on the data
of IvfPqScaleBenchmark (the raw float32 files it writes with -Dgv.scale.dumpData=true: /tmp/gv-bench-N-DIMS.{base,
queries}.f32, the same generator and seeds as FlatSearchBenchmark): the exact-search peer of the scale tables
(10M x 128, 2M x 768). Timed as ours are: wall clock with the queries copied to the GPU and the ids copied back (the
base stays resident, as our index does), batch 10k (the median of 5 after a warm-up) and one query at a time (the
median over SINGLE queries). A batch of 10k over 10M rows does not fit one distance matrix: the queries go in blocks
of QUERY_BLOCK against the base in chunks of BASE_CHUNK rows, each chunk's top 10 kept and merged, as a PyTorch user
would tile it. Recall@10 of TF32 against FP32's ids.

    python3 torch_scale.py N DIMS OUT_DIR
"""
import csv, os, statistics, sys, time
import numpy as np
import torch

n, dims, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
K, QUERY_BLOCK, BASE_CHUNK, SINGLE = 10, 2048, 1 << 20, 200
name = f"{n}-{dims}"
base_host = np.fromfile(f"/tmp/gv-bench-{name}.base.f32", dtype=np.float32).reshape(n, dims)
queries = np.fromfile(f"/tmp/gv-bench-{name}.queries.f32", dtype=np.float32).reshape(-1, dims)
print("torch", torch.__version__, torch.cuda.get_device_name(0), base_host.shape, queries.shape, flush=True)
base = torch.from_numpy(base_host).cuda()
del base_host
norms = (base * base).sum(1)

def search(host_queries):
    # one query's distances to the whole base fit (40 MB at 10M): a PyTorch user would not tile them
    chunk = n if len(host_queries) == 1 else BASE_CHUNK
    q_all = torch.from_numpy(np.ascontiguousarray(host_queries)).cuda()
    ids = []
    for s in range(0, len(q_all), QUERY_BLOCK):
        q = q_all[s:s + QUERY_BLOCK]
        qn = (q * q).sum(1)[:, None]
        best_d, best_i = None, None
        for c in range(0, n, chunk):
            d = norms[None, c:c + chunk] - 2 * q @ base[c:c + chunk].T + qn
            v, i = torch.topk(d, K, dim=1, largest=False)
            i = i + c
            if best_d is None:
                best_d, best_i = v, i
            else:
                v, j = torch.topk(torch.cat([best_d, v], 1), K, dim=1, largest=False)
                best_i = torch.gather(torch.cat([best_i, i], 1), 1, j)
                best_d = v
        ids.append(best_i)
    return torch.cat(ids).cpu().numpy()

rows, fp32_ids = [], None
for label, tf32 in (("torch-fp32", False), ("torch-tf32", True)):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    batch = queries[:10000]
    ids = search(batch)  # warm-up
    times = []
    for _ in range(5):
        torch.cuda.synchronize(); s = time.perf_counter()
        ids = search(batch)
        times.append(time.perf_counter() - s)
    median = statistics.median(times)
    if fp32_ids is None:
        fp32_ids, recall = ids, 1.0
    else:
        recall = float(np.mean([len(set(ids[i]) & set(fp32_ids[i])) / K for i in range(len(ids))]))
    singles = []
    for i in range(SINGLE + 5):
        torch.cuda.synchronize(); s = time.perf_counter()
        search(queries[i:i + 1])
        if i >= 5:
            singles.append(time.perf_counter() - s)
    single = statistics.median(singles)
    rows.append((name, label, len(batch), f"{len(batch) / median:.1f}", f"{median * 1e3:.2f}", f"{single * 1e6:.1f}",
                 f"{recall:.4f}"))
    print(f"{label} {name}: batch {len(batch)} {len(batch) / median:,.0f} queries/s (median of 5, {median * 1e3:.1f} ms); "
          f"one query at a time {single * 1e6:.1f} us (median of {SINGLE}); recall@10 against FP32 {recall:.4f}", flush=True)
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, f"torch-scale-{name}.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["data", "system", "batch", "queries_per_s", "batch_ms", "single_us", "recall_vs_fp32"])
    w.writerows(rows)
