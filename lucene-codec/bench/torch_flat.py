#!/usr/bin/env python3
"""PyTorch exact k-NN (squared L2: ||x||^2 - 2 x.q + ||q||^2, matmul + topk) on the same data as
FlatSearchBenchmark (raw float32 files it writes under /tmp), on the same GPU, FP32 (TF32 off).

    python3 torch_flat.py N DIMS OUT_DIR
Batches that need more memory than the GPU has (the whole queries x vectors distance matrix) are
reported as OOM, as they happen. Timings: CUDA events, medians after a warm-up.
"""
import csv, os, sys
import numpy as np
import torch

n, dims, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
name = f"{n}-{dims}"
torch.backends.cuda.matmul.allow_tf32 = False
base = torch.from_numpy(np.fromfile(f"/tmp/gv-bench-{name}.base.f32", dtype=np.float32).reshape(n, dims)).cuda()
queries = torch.from_numpy(np.fromfile(f"/tmp/gv-bench-{name}.queries.f32", dtype=np.float32).reshape(-1, dims)).cuda()
base_norms = (base * base).sum(1)
print("torch", torch.__version__, torch.cuda.get_device_name(0))

def search(q, k):
    d = base_norms[None, :] - 2 * q @ base.T + (q * q).sum(1)[:, None]
    return torch.topk(d, k, dim=1, largest=False)

rows = []
for k in (10, 100):
    for batch in (1, 16, 1024, 10000):
        reps = 30 if batch <= 16 else 7 if batch <= 1024 else 3
        try:
            q = queries[:batch]
            search(q, k); torch.cuda.synchronize()
            times = []
            for r in range(reps):
                qs = queries[r:r + 1] if batch == 1 else q
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); search(qs, k); e.record(); torch.cuda.synchronize()
                times.append(s.elapsed_time(e))
            ms = sorted(times)[reps // 2]
            rows.append((name, k, batch, "torch-fp32", batch / (ms / 1e3), ms))
        except torch.OutOfMemoryError:
            torch.cuda.empty_cache()
            rows.append((name, k, batch, "torch-fp32", float("nan"), float("nan")))
            print(f"k={k} batch={batch}: out of memory (distance matrix {batch} x {n})")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, f"torch-flat-{name}.csv"), "w", newline="") as f:
    w = csv.writer(f); w.writerow(["dataset", "k", "batch", "path", "queries_per_s", "median_ms"]); w.writerows(rows)
print(f"{'dataset':12} {'k':>4} {'batch':>6} {'path':10} {'queries/s':>14} {'median ms':>12}")
for r in rows:
    print(f"{r[0]:12} {r[1]:>4} {r[2]:>6} {r[3]:10} {r[4]:>14.0f} {r[5]:>12.3f}")
