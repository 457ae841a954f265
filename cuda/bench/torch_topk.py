"""torch.topk on the same shapes as SelectBench (smallest k per row), same GPU: GB/s read and the
fraction of a device-to-device copy measured here (read + write). Writes $OUT/torch_topk.csv."""
import os, sys, torch

def med(x):
    x = sorted(x); return x[len(x) // 2]

def time_ms(fn, reps):
    ts = []
    for r in range(reps + 2):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize()
        if r >= 2: ts.append(s.elapsed_time(e))
    return med(ts)

def main():
    max_floats = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000_000
    dev = torch.device("cuda")
    nbytes = 2 << 30
    a = torch.empty(nbytes // 4, device=dev); b = torch.empty_like(a)
    copy = 2 * nbytes / (time_ms(lambda: b.copy_(a), 10) * 1e-3) / 1e9
    del a, b
    print(f"torch {torch.__version__}, GPU {torch.cuda.get_device_name()}; copy {copy:.0f} GB/s (read+write)")
    buf = torch.rand(max_floats, device=dev) * 2 - 1
    shapes = [(1, 1_000_000), (1, 10_000_000), (1, 100_000_000), (100, 100_000), (1000, 100_000), (10_000, 10_000), (100_000, 1000)]
    out = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out, "torch_topk.csv"), "w") as f:
        f.write("rows,len,k,ms,gbps,fraction_of_copy_bw\n")
        print(f"{'rows x len':<14} {'k':>5} {'torch GB/s (%bw)':>18}")
        for rows, ln in shapes:
            total = rows * ln
            if total > max_floats: continue
            regions = max(1, max_floats // total)
            views = [buf[i * total:(i + 1) * total].view(rows, ln) for i in range(min(regions, 16))]
            for k in (1, 10, 100, 1000, 2048):
                if k > ln: continue
                it = iter(range(10**9))
                ms = time_ms(lambda: torch.topk(views[next(it) % len(views)], k, dim=1, largest=False), 7 if total >= 50_000_000 else 15)
                gbps = 4 * total / (ms * 1e-3) / 1e9
                f.write(f"{rows},{ln},{k},{ms:.4f},{gbps:.1f},{gbps / copy:.4f}\n")
                print(f"{str(rows) + 'x' + str(ln):<14} {k:>5} {gbps:>11.0f} ({100 * gbps / copy:3.0f}%)")

if __name__ == "__main__":
    main()
