"""torch exact search (FP32 matmul + topk, squared L2 = |x|^2 - 2 q.x + |q|^2) on the same synthetic
shapes as ExactSearchBench: 1M x 128 and 1M x 768, batches 1 / 16 / 1024 / 10000, k = 10, 100.
Timing: whole call incl. query upload and result download, median. Writes $OUT/torch_exact.csv.
Env: TORCH_BATCHES (e.g. 1,2,4,8,16,32,64,128: the small-batch peer of ExactSearchBench small), TORCH_PRECISIONS
(fp32 by default; fp32,tf32 adds TF32 matmuls)."""
import os, sys, time, torch

def med(x):
    x = sorted(x); return x[len(x) // 2]

def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    batches = [int(b) for b in os.environ.get("TORCH_BATCHES", "1,16,1024,10000").split(",")]
    precisions = os.environ.get("TORCH_PRECISIONS", "fp32").split(",")
    dev = torch.device("cuda")
    out = os.environ.get("OUT", "/tmp")
    print(f"torch {torch.__version__}, GPU {torch.cuda.get_device_name()}, precisions {precisions}")
    print(f"{'n x dims':<9} {'batch':>6} {'k':>4} {'prec':>5} {'median ms':>10} {'queries/s':>12} {'TFLOP/s':>8}")
    with open(os.path.join(out, "torch_exact.csv"), "w") as f:
        f.write("n,dims,batch,k,precision,median_ms,queries_per_s,tflops\n")
        for dims in (128, 768):
            x = torch.rand(n, dims, device=dev) * 2 - 1
            xn = (x * x).sum(1)
            qh = torch.rand(10_000, dims) * 2 - 1
            for batch, k, prec in [(b, k, p) for b in batches for k in (10, 100) for p in precisions]:
                torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
                def run():
                    q = qh[:batch].to(dev)
                    d = xn[None, :] - 2 * (q @ x.T) + (q * q).sum(1)[:, None]
                    v, i = torch.topk(d, k, dim=1, largest=False)
                    return v.cpu(), i.cpu()
                try:
                    ts = []
                    reps = 5 if batch >= 1024 else 30
                    for r in range(reps + 2):
                        torch.cuda.synchronize(); t0 = time.perf_counter(); run(); t = (time.perf_counter() - t0) * 1e3
                        if r >= 2: ts.append(t)
                    ms = med(ts)
                    qps = batch / (ms * 1e-3); tf = 2 * n * batch * dims / (ms * 1e-3) / 1e12
                    f.write(f"{n},{dims},{batch},{k},{prec},{ms:.4f},{qps:.1f},{tf:.2f}\n")
                    print(f"{str(n // 1000) + 'kx' + str(dims):<9} {batch:>6} {k:>4} {prec:>5} {ms:>10.3f} {qps:>12.0f} {tf:>8.1f}")
                except torch.OutOfMemoryError:
                    torch.cuda.empty_cache()
                    f.write(f"{n},{dims},{batch},{k},{prec},OOM,,\n")
                    print(f"{str(n // 1000) + 'kx' + str(dims):<9} {batch:>6} {k:>4} {'OOM':>10}")
            del x, xn
            torch.cuda.empty_cache()

if __name__ == "__main__":
    main()
