#!/usr/bin/env python3
"""PyTorch exact k-NN on Fashion-MNIST (60k x 784 train, 10k queries, k = 10, squared L2 as
||x||^2 - 2 x.q + ||q||^2, matmul + topk), FP32 and TF32, the peer of FashionMnistBenchmark's rows.
Timed as ours are: wall clock per batch of 10k, queries copied to the GPU and ids back included
(the base stays resident, as our index does); the best and the median of 7 after a warm-up
(queries_per_s: the best, as before; queries_per_s_median). Recall@10 against a float64 ground truth.

    python3 torch_fmnist.py DATA_DIR OUT_DIR
"""
import csv, gzip, os, sys, time
import numpy as np
import torch

data, out = sys.argv[1], sys.argv[2]
K = 10

def images(name):
    with gzip.open(os.path.join(data, name)) as f:
        raw = f.read()
    n, rows, cols = (int.from_bytes(raw[i:i + 4], "big") for i in (4, 8, 12))
    return np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(n, rows * cols).astype(np.float32)

train, test = images("train-images-idx3-ubyte.gz"), images("t10k-images-idx3-ubyte.gz")
print("torch", torch.__version__, torch.cuda.get_device_name(0), train.shape, test.shape)
base = torch.from_numpy(train).cuda()
norms = (base * base).sum(1)

# ground truth in float64, on the GPU, in chunks
b64 = base.double()
truth = []
for s in range(0, len(test), 1000):
    q = torch.from_numpy(test[s:s + 1000]).cuda().double()
    d = (b64 * b64).sum(1)[None, :] - 2 * q @ b64.T + (q * q).sum(1)[:, None]
    truth.append(torch.topk(d, K, dim=1, largest=False).indices.cpu().numpy())
truth = np.concatenate(truth)
del b64

def search(host_queries):
    q = torch.from_numpy(host_queries).cuda()
    d = norms[None, :] - 2 * q @ base.T + (q * q).sum(1)[:, None]
    return torch.topk(d, K, dim=1, largest=False).indices.cpu().numpy()

rows = []
for name, tf32 in (("torch-fp32", False), ("torch-tf32", True)):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    search(test)
    times, ids = [], None
    for _ in range(7):
        torch.cuda.synchronize(); s = time.perf_counter()
        ids = search(test)
        times.append(time.perf_counter() - s)
    best, median = min(times), float(np.median(times))
    recall = np.mean([len(set(ids[i]) & set(truth[i])) / K for i in range(len(test))])
    rows.append((name, "batch=10000", f"{recall:.4f}", f"{len(test) / best:.1f}", "0.0", f"{len(test) / median:.1f}"))
    print(f"{name}: recall@10 {recall:.4f}, {len(test) / best:,.0f} queries/s ({best * 1e3:.1f} ms per 10k), "
          f"median of 7 {len(test) / median:,.0f} queries/s ({median * 1e3:.1f} ms)")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "torch-fmnist.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["system", "parameter", "recall", "queries_per_s", "build_s", "queries_per_s_median"])
    w.writerows(rows)
