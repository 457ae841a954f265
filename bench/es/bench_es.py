#!/usr/bin/env python3
"""End-to-end knn benchmark of a real Elasticsearch node: gpu_vector (flat, GPU) vs dense_vector HNSW and
int8_hnsw on the same node, with the same data and queries, plus the node's own ceilings (noop query, knn on a
tiny 2,000-vector HNSW index, and bigceiling: the same 2,000 vectors spread over an index of --n documents, which
costs Elasticsearch what any index of that size costs outside the vector search: its fetch phase, its segments).

Needs only the standard library and numpy; the exact ground truth uses torch on the GPU when it can (else numpy,
fine for small n); the plot uses matplotlib when it is importable (else it is skipped, saying so).

Output (under --out, default $OUT or /tmp): one JSON line per step on stdout and in es_bench.jsonl (es_bench.json:
the same as one array), summary.md (a table) and qps_vs_clients.png.

Data: --dataset synthetic (clustered gaussians: the same generator and seed as the reference
../shared/device/es-on-gpu/bench_es.py, so numbers stay comparable) or fashion (Fashion-MNIST, 784 dims: the 60,000
training images are the documents, the first --queries test images the queries; files as in the Debian package
dataset-fashion-mnist, found in --fashion-dir or $GV_FASHION_DIR or /usr/share/datasets/fashion-mnist).
Filters: every document has "f" = id % 100, a filter at p % selectivity is the range f < p.
--dataset embedding: embedding-like unit vectors (cosine; ANCHORS.md "Data sets"), seed 38, with a printed check of
its statistics. --element-type byte|bit|bfloat16 maps every system with that element_type (byte: the vectors scaled to
int8, bit: their sign bits, bfloat16: rounded), the exact ground truth in that type's own metric; --compare-float runs
the float systems on the float data in the same run (memory a vector, q/s and recall side by side; recall_vs_qps.png).

usage: bench_es.py [--dataset synthetic|fashion|embedding] [--element-type float|byte|bit|bfloat16] [--compare-float]
                   [--n 1000000] [--dims 128] [--systems gpu,hnsw,int8,bbq,noop,ceiling]
                   [--segments one|natural|both] [--clients 1,16,64,256] [--filters 1,10,50] [--duration 10] ...
       bench_es.py --plot-only es_bench.jsonl[,more.jsonl]   (table + plots from earlier runs' lines)
       bench_es.py --self-check   (data generator, conversions, ground truth against a brute force; no node)
"""
import argparse, gzip, json, multiprocessing as mp, os, socket, sys, threading, time

import numpy as np

SYSTEMS = ("noop", "ceiling", "bigceiling", "gpuceiling", "gpu", "ivf", "ivfpq", "graph", "hnsw", "int8", "bbq")
GPU_SYSTEMS = ("gpu", "gpuceiling", "ivf", "ivfpq", "graph")
ELEMENT_TYPES = ("float", "byte", "bit", "bfloat16")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", choices=("synthetic", "fashion", "embedding"), default="synthetic",
                   help="synthetic: clustered gaussians (l2_norm); fashion: Fashion-MNIST; embedding: embedding-like "
                        "unit vectors (cosine; ANCHORS.md), seed 38")
    p.add_argument("--element-type", choices=ELEMENT_TYPES, default="float",
                   help="the fields' element_type: byte = the vectors scaled to int8 (one max-abs scale for the data "
                        "set), bit = their sign bits (dims bits, sent as dims/8 signed bytes, l2_norm = hamming), "
                        "bfloat16 = the floats rounded to bf16")
    p.add_argument("--compare-float", action="store_true",
                   help="with --element-type byte|bit|bfloat16: run the same systems (and bbq) on the float data too, "
                        "in the same run, after the element type's")
    p.add_argument("--n", type=int, default=1_000_000, help="documents (fashion: at most 60,000)")
    p.add_argument("--dims", type=int, default=128, help="synthetic only (fashion: 784)")
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--systems", default="noop,ceiling,gpu,hnsw,int8",
                   help="comma list of: noop (size:0 match_all, the node + load generator ceiling), ceiling "
                        "(dense_vector HNSW on 2,000 vectors), bigceiling (the same 2,000 vectors spread over --n "
                        "documents, the others without one: the knn ceiling of an index of that size), gpuceiling "
                        "(gpu_vector on the same 2,000), gpu "
                        "(gpu_vector flat), ivf (gpu_vector ivf_flat, default nlist/nprobe), ivfpq (gpu_vector ivf_pq, defaults), graph (gpu_vector graph, defaults), hnsw (dense_vector hnsw m16 efc100), int8 (dense_vector int8_hnsw), "
                        "bbq (dense_vector bbq_hnsw m16 efc100, float only: Elasticsearch's default at 768 dims)")
    p.add_argument("--segments", choices=("one", "natural", "both"), default="one",
                   help="natural: the segments of the bulk load; one: force-merged; both: natural, then merged")
    p.add_argument("--clients", default="1,16,64,256")
    p.add_argument("--filters", default="1,10,50", help="filter selectivities in %% ('' = none)")
    p.add_argument("--filter-clients", type=int, default=16)
    p.add_argument("--gpu-options", default="", metavar="JSON",
                   help="index_options merged into the gpu_vector systems' mappings (flat, ivf, ivfpq, graph), e.g. "
                        "'{\"pq_m\": 192}' for an ivf_pq with finer codes; the indices get a suffix naming them, so "
                        "that --keep / --reuse keep the variants apart")
    p.add_argument("--gpu-warmup", action="store_true",
                   help="POST <index>/_gpu_vectors/warmup before measuring each layout of a gpu_vector system: its "
                        "segments resident before the first query, in the forms the node picks for the whole index "
                        "(compact copies when it does not fit the memory budget whole)")
    p.add_argument("--msearch-clients", default="1,16", help="concurrent _msearch requests of --msearch-size knn searches ('' = none)")
    p.add_argument("--msearch-size", type=int, default=100)
    p.add_argument("--nc", default="100", help="num_candidates for hnsw/int8/bbq/ceiling and gpu_vector ivf/ivfpq/graph "
                   "(comma list: a clients sweep each; gpu_vector flat is exact and takes the first)")
    p.add_argument("--duration", type=float, default=10.0, help="seconds measured per point")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds run before each point is measured")
    p.add_argument("--procs", type=int, default=0, help="load generator processes (default: min(clients, cores/2)); "
                   "each runs clients/procs threads with one keep-alive connection each")
    p.add_argument("--bulk-procs", type=int, default=0, help="bulk load processes (default: min(8, cores))")
    p.add_argument("--tiny-segments", type=int, default=1,
                   help="load the 2,000-vector indices (ceiling, gpuceiling) in this many refreshed parts; above 1 they "
                        "are measured at those segments (layout natural), then force-merged (one): what Elasticsearch's "
                        "own per-segment work costs a knn search when the vector search costs nothing")
    p.add_argument("--shards", type=int, default=1)
    p.add_argument("--keep", action="store_true", help="keep the indices (default: delete each after its run); a kept "
                   "index is flushed after its load, so that a node restarted on the same data opens the same segments")
    p.add_argument("--settle", type=float, default=0, metavar="S",
                   help="before measuring an index's natural segments, wait until no merge runs on it and its segment "
                        "count has held for S seconds (at most max(60, 6 S) s): runs of one kept index under different "
                        "node settings (--reuse) then measure the same segments, not the ones a merge left meanwhile")
    p.add_argument("--reuse", action="store_true", help="measure an index of --n documents that a run with --keep left "
                   "(its natural segments as they are) instead of loading it again: two plugin builds on one data path")
    p.add_argument("--paired", action="store_true",
                   help="keep the knn ceiling's index and measure it again right before each knn point of the other "
                        "systems, at the same clients (its _msearch too, before each _msearch point): each point gets its "
                        "own ceiling (of_ceiling), robust to drift")
    p.add_argument("--no-disk-usage", action="store_true", help="leave out _disk_usage?run_expensive_tasks=true from "
                   "the memory figures (it reads the whole index: its time is logged as disk_usage_s)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9200)
    p.add_argument("--fashion-dir", default=os.environ.get("GV_FASHION_DIR", "/usr/share/datasets/fashion-mnist"))
    p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    p.add_argument("--plot-only", metavar="JSONL", help="table + plots from earlier runs' es_bench.jsonl (comma list: "
                   "several runs, e.g. one command per system, in one table; PATH=TAG names that run's systems "
                   "'system (TAG)', e.g. the same system under two node settings)")
    p.add_argument("--self-check", action="store_true", help="check the data generator, the byte/bit/bfloat16 "
                   "conversions and the exact ground truth against a brute force on tiny data, then exit (no node)")
    a = p.parse_args(argv)
    a.systems = [s for s in a.systems.split(",") if s]
    bad = [s for s in a.systems if s not in SYSTEMS]
    if bad:
        p.error("unknown systems %s (known: %s)" % (bad, ",".join(SYSTEMS)))
    a.clients = [int(x) for x in a.clients.split(",") if x]
    a.filters = [int(x) for x in a.filters.split(",") if x]
    a.msearch_clients = [int(x) for x in a.msearch_clients.split(",") if x]
    a.nc = [int(x) for x in a.nc.split(",") if x]
    if a.element_type == "bit" and a.dims % 8:
        p.error("--element-type bit needs --dims a multiple of 8")
    return a


A = None
RESULTS = []


def log(**kv):
    kv["t"] = round(time.time(), 1)
    RESULTS.append(kv)
    line = json.dumps(kv)
    print(line, flush=True)
    with open(os.path.join(A.out, "es_bench.jsonl"), "a") as f:
        f.write(line + "\n")
    with open(os.path.join(A.out, "es_bench.json"), "w") as f:
        json.dump(RESULTS, f, indent=1)


def say(msg):
    print(">> " + msg, flush=True)


# ---------------------------------------------------------------- HTTP: a minimal keep-alive HTTP/1.1 client


class Conn:
    """One keep-alive connection; requests are prebuilt bytes so that the load generator spends little CPU."""

    def __init__(self, host, port, timeout=3600):
        self.host, self.port = host, port
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    @staticmethod
    def build(method, path, body=b"", ctype="application/json"):
        if isinstance(body, str):
            body = body.encode()
        return ("%s %s HTTP/1.1\r\nHost: es\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
                % (method, path, ctype, len(body))).encode() + body

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("connection closed by the node")
        self.buf += chunk

    def call(self, request):
        self.sock.sendall(request)
        while True:
            i = self.buf.find(b"\r\n\r\n")
            if i >= 0:
                break
            self._fill()
        head, self.buf = self.buf[:i].decode("latin-1"), self.buf[i + 4:]
        status = int(head[9:12])
        hdr = {}
        for line in head.split("\r\n")[1:]:
            k, _, v = line.partition(":")
            hdr[k.strip().lower()] = v.strip()
        if "content-length" in hdr:
            n = int(hdr["content-length"])
            while len(self.buf) < n:
                self._fill()
            body, self.buf = self.buf[:n], self.buf[n:]
        elif hdr.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                while b"\r\n" not in self.buf:
                    self._fill()
                j = self.buf.find(b"\r\n")
                size = int(self.buf[:j].split(b";")[0], 16)
                while len(self.buf) < j + 2 + size + 2:
                    self._fill()
                parts.append(self.buf[j + 2:j + 2 + size])
                self.buf = self.buf[j + 2 + size + 2:]
                if size == 0:
                    break
            body = b"".join(parts)
        else:
            body = b""
        return status, body

    def close(self):
        self.sock.close()


def req(method, path, body=None, ctype=None):
    """An admin request on a fresh connection: (status, parsed JSON or None)."""
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    ctype = ctype or ("application/x-ndjson" if path.split("?")[0].endswith(("_bulk", "_msearch")) else "application/json")
    c = Conn(A.host, A.port)
    try:
        st, txt = c.call(Conn.build(method, path, body or b"", ctype))
    finally:
        c.close()
    try:
        return st, (json.loads(txt) if txt else None)
    except ValueError:
        return st, txt.decode(errors="replace")


# ---------------------------------------------------------------- data + exact ground truth

X = Q = XS = QS = None  # documents, queries (float32); both as JSON-ready rows (the same float32 values, short)
GT = {}            # (name, filter%) -> [queries, k] int ids, or per query the ids tied within the k-th distance
XF = QF = None     # the float data every element type is derived from (float32)
VIEWS = {}         # element type -> {X, Q, XS, QS, GT, metric, tie_eps, similarity}: the data as that type stores it
ET = "float"       # the element type of the system running now (use_view sets X, Q, XS, QS, GT from VIEWS[ET])


_EMB = {}  # embedding_data's parameters, for its chunk workers (forked)


def _emb_chunk(ci):
    """Rows ci * chunk ... of the embedding data, from the chunk's own generator (the same in any process)."""
    e = _EMB
    s = ci * e["chunk"]
    m = min(e["n"], s + e["chunk"]) - s
    rs = np.random.default_rng([e["seed"], ci])
    c = rs.choice(len(e["p"]), m, p=e["p"])
    y = (e["centres"][c] + e["w"] * rs.standard_normal((m, len(e["sd"]))) * e["sd"]).astype(np.float32)
    x = y @ e["B32"] + e["mu32"]
    x += rs.standard_normal((m, e["dims"]), dtype=np.float32) * e["noise"]
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x = np.round(x, 5)
    if "out" in e:  # a forked worker: into the shared output
        e["out"][s:s + m] = x
        return ci, None
    return ci, x


def embedding_data(n, dims, seed=38, chunk=65536, procs=0):
    """Embedding-like synthetic vectors (../../shared/ANCHORS.md "Data sets"): unit length, compared by cosine; a
    strong common mean direction (median cosine of random pairs ~0.2); the rest in a latent space of
    r = min(64, dims - 1) dimensions whose variances fall as a power law (i^-0.6), holding overlapping clusters
    (within-cluster spread 1.1 x the centres' spread) of Zipf sizes (exponent 0.9, n / 1,000 clusters); plus isotropic
    noise in all dims (a fifth of the non-mean variance), which sets the nearest neighbour at cosine ~0.7 at 1M.
    Deterministic: seed 38, each chunk of 65,536 rows from its own generator, so the chunks are made in parallel
    (procs, default min(8, cores)) and the data is the same whatever the number of processes.
    Rounded to 5 decimals (the values sent as JSON are these float32 values, short)."""
    rng = np.random.default_rng(seed)
    r = min(64, dims - 1)
    C = max(10, n // 1000)
    w, eps2, zipf, alpha = 1.1, 0.6, 0.9, 0.6
    lam = np.arange(1, r + 1, dtype=np.float64) ** (-alpha)
    sd = np.sqrt(lam / lam.sum())
    basis, _ = np.linalg.qr(rng.standard_normal((dims, r + 1)))
    mu, B = basis[:, 0], basis[:, 1:].T          # the mean direction, orthogonal to the latent space
    a = np.sqrt(0.25 * (1 + w * w + eps2))        # |mean|^2 = a quarter of the rest: random pairs at cosine ~0.2
    centres = rng.standard_normal((C, r)) * sd
    p = 1.0 / np.arange(1, C + 1) ** zipf
    p /= p.sum()
    _EMB.clear()
    _EMB.update(n=n, dims=dims, seed=seed, chunk=chunk, p=p, centres=centres, w=w, sd=sd, B32=B.astype(np.float32),
                mu32=(a * mu).astype(np.float32), noise=np.float32(np.sqrt(eps2 / dims)))
    chunks = range((n + chunk - 1) // chunk)
    procs = min(procs or min(8, os.cpu_count() or 1), len(chunks))
    if procs > 1:  # the workers write their rows into shared memory (no copies through pipes)
        out = np.frombuffer(mp.RawArray("f", n * dims), np.float32).reshape(n, dims)
        _EMB["out"] = out
        with mp.get_context("fork").Pool(procs) as pool:
            for _ in pool.imap_unordered(_emb_chunk, chunks):
                pass
        del _EMB["out"]
    else:
        out = np.empty((n, dims), np.float32)
        for ci in chunks:
            out[ci * chunk:ci * chunk + chunk] = _emb_chunk(ci)[1]
    return out


def data_check(Xd, Qd, sample=200, seed=1):
    """What a reader needs to see that the embedding data is what it claims: the median cosine of random pairs, the
    median cosine of a query's nearest document (sample queries against every document), the norms, and the share of
    the variance in the top 8 / 64 principal components (a low intrinsic dimension puts most of it there)."""
    rng = np.random.default_rng(seed)
    un = lambda v: v / np.linalg.norm(v, axis=-1, keepdims=True)
    i = rng.integers(0, len(Xd), (20000, 2))
    pair = np.einsum("ij,ij->i", un(Xd[i[:, 0]]), un(Xd[i[:, 1]]))
    qs = un(Qd[:sample].astype(np.float32))
    best = np.full(len(qs), -2.0, np.float32)
    for s in range(0, len(Xd), 100000):
        best = np.maximum(best, (qs @ un(Xd[s:s + 100000]).T).max(1))
    smp = Xd[rng.choice(len(Xd), min(len(Xd), 20000), replace=False)].astype(np.float64)
    ev = np.sort(np.linalg.eigvalsh(np.cov(smp.T)))[::-1]
    nrm = np.linalg.norm(Xd[:10000], axis=1)
    return {"median_pair_cos": round(float(np.median(pair)), 3),
            "pair_cos_p10_p90": [round(float(x), 3) for x in np.percentile(pair, [10, 90])],
            "median_nn_cos": round(float(np.median(best)), 3),
            "nn_cos_p10_p90": [round(float(x), 3) for x in np.percentile(best, [10, 90])],
            "nn_sample_queries": len(qs), "norm_min_max": [round(float(nrm.min()), 4), round(float(nrm.max()), 4)],
            "var_share_top8_top64": [round(float(ev[:8].sum() / ev.sum()), 3), round(float(ev[:64].sum() / ev.sum()), 3)]}


def bf16_round(v):
    """float32 -> the nearest bfloat16 (round to nearest even), as float32: what a bfloat16 field stores."""
    u = np.ascontiguousarray(v, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def byte_scale(Xd):
    """byte: one scale for the whole data set, max |x| -> 127 (documents; queries take the same scale, clipped)."""
    return 127.0 / float(np.abs(Xd).max())


def to_byte(v, scale):
    return np.clip(np.rint(v.astype(np.float64) * scale), -127, 127).astype(np.int8)


def to_bits(v):
    """bit: the sign bits (x > 0 -> 1), 8 a byte, first dimension in the high bit (numpy packbits), as signed bytes:
    dims / 8 values in -128..127, as dense_vector takes a bit vector."""
    return np.packbits(v > 0, axis=1).view(np.int8)


def bits_pm1(b):
    """Packed bits (int8 or uint8 rows) -> +-1 int8 rows: hamming(a, b) = |pm1(a) - pm1(b)|^2 / 4 exactly."""
    return (np.unpackbits(b.view(np.uint8), axis=1).astype(np.int8) * 2 - 1)


POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], np.uint8)


def hamming_popcount(Xb, qb):
    """Hamming distances from one packed query to packed documents by xor + popcount (the self-check's reference)."""
    return POPCOUNT8[np.bitwise_xor(Xb.view(np.uint8), qb.view(np.uint8)[None, :])].sum(1, dtype=np.int64)


def similarity_for(et):
    """The similarity each element type's field uses: bit l2_norm (hamming, dense_vector's default for bit); the others the data set's own (embedding: cosine, what embedding models are
    compared by and dense_vector's default for float and byte; synthetic, fashion: l2_norm as before). byte keeps
    cosine rather than dot_product: the rounded int8 vectors are no longer of one length, and cosine (scale-free) is
    the float data's ordering, computed by Elasticsearch on the integers."""
    if et == "bit":
        return "l2_norm"
    return "cosine" if A.dataset == "embedding" else "l2_norm"


def make_views():
    """The data as each element type needed stores it (A.element_type; float too with --compare-float), with the
    metric its exact ground truth uses: float and bfloat16 as the data set's (bfloat16 on the documents rounded to
    bfloat16, which it sends, so the truth is what the field holds); byte on the int8 values (cosine or l2 of the
    integers); bit hamming (l2 of +-1 vectors / 4, exact integers). Integer metrics tie: their truth is, per query,
    every id within the k-th distance (tie_eps), so that any of equally near documents counts."""
    ets = [A.element_type] + (["float"] if A.compare_float and A.element_type != "float" else [])
    metric = "cos" if A.dataset == "embedding" else "l2"
    for et in ets:
        v = {"similarity": similarity_for(et), "GT": {}}
        if et == "float":
            v.update(X=XF, Q=QF, XS=XS, QS=QS, metric=metric, tie_eps=None)
        elif et == "bfloat16":
            xb = bf16_round(XF)
            v.update(X=xb, Q=QF, XS=xb.astype(np.float64), QS=QS, metric=metric, tie_eps=None)
        elif et == "byte":
            s = byte_scale(XF)
            xb, qb = to_byte(XF, s), to_byte(QF, s)
            zero = int((~xb.any(1)).sum())
            if zero and metric == "cos":
                raise SystemExit("%d documents round to the zero vector at byte scale %.1f (cosine refuses them)" % (zero, s))
            v.update(X=xb, Q=qb, XS=xb, QS=qb, metric=metric,  # int8 rows: .tolist() gives ints
                     tie_eps=0.5 if metric == "l2" else 1e-9, scale=round(s, 3))
        elif et == "bit":
            if A.dims % 8:
                raise SystemExit("bit vectors need dims a multiple of 8 (dims %d)" % A.dims)
            xb, qb = to_bits(XF), to_bits(QF)
            v.update(X=xb, Q=qb, XS=xb, QS=qb, metric="hamming", tie_eps=0.5)
        VIEWS[et] = v
    use_view(A.element_type)


def use_view(et):
    """Make element type et's data the current one (X, Q, XS, QS, GT): what the loaders and the load generator (forked
    after this) send and measure against."""
    global X, Q, XS, QS, GT, ET
    v = VIEWS[et]
    ET, X, Q, XS, QS, GT = et, v["X"], v["Q"], v["XS"], v["QS"], v["GT"]


def make_data():
    global X, Q, XS, QS, XF, QF
    if A.dataset == "embedding":
        t0 = time.time()
        Xa = embedding_data(A.n + A.queries, A.dims)
        Q, X = Xa[A.n:], Xa[:A.n]
        XS, QS = X.astype(np.float64), Q.astype(np.float64)  # 5 decimals: short in JSON, the same float32 values
        chk = data_check(X, Q)
        log(step="data_check", dataset=A.dataset, n=A.n, dims=A.dims, gen_s=round(time.time() - t0, 1), **chk)
        say("embedding data %d x %d in %.1f s: median cosine of random pairs %s (p10-p90 %s), of a query's nearest "
            "document %s (p10-p90 %s, %d queries against all), norms %s, variance in the top 8 / 64 principal "
            "components %s" % (A.n, A.dims, time.time() - t0, chk["median_pair_cos"], chk["pair_cos_p10_p90"],
                              chk["median_nn_cos"], chk["nn_cos_p10_p90"], chk["nn_sample_queries"],
                              chk["norm_min_max"], chk["var_share_top8_top64"]))
    elif A.dataset == "synthetic":
        # the reference generator (bench_es.py of ../shared/device/es-on-gpu): same seed, same values
        rng = np.random.default_rng(7)
        centers = rng.normal(0, 1, (1000, A.dims)).astype(np.float32)
        assign = rng.integers(0, 1000, A.n + A.queries)
        Xa = (centers[assign] + 0.35 * rng.normal(0, 1, (A.n + A.queries, A.dims))).astype(np.float32)
        Xa = np.round(Xa, 4)
        Q, X = Xa[A.n:], Xa[:A.n]
        # sent as the shortest decimals (0.1234, not 0.12340000271797180): the same float32 values at half the bytes
        XS, QS = np.round(X.astype(np.float64), 4), np.round(Q.astype(np.float64), 4)
        if not (np.array_equal(XS.astype(np.float32), X) and np.array_equal(QS.astype(np.float32), Q)):
            XS, QS = X.astype(np.float64), Q.astype(np.float64)
    else:
        def idx(name):  # idx files, gzipped (as Debian ships them) or not (as the GPU payload carries them)
            path = os.path.join(A.fashion_dir, name)
            if os.path.exists(path):
                with gzip.open(path) as f:
                    raw = f.read()
            else:
                with open(path[:-3], "rb") as f:
                    raw = f.read()
            count, rows, cols = (int.from_bytes(raw[i:i + 4], "big") for i in (4, 8, 12))
            return np.frombuffer(raw, np.uint8, offset=16).reshape(count, rows * cols)
        if not any(os.path.exists(os.path.join(A.fashion_dir, f)) for f in ("train-images-idx3-ubyte.gz", "train-images-idx3-ubyte")):
            raise SystemExit("no Fashion-MNIST training images in %s (on the GPU machine: command 1b unpacks "
                             ".device-es/es3 there; here: apt-get install dataset-fashion-mnist)" % A.fashion_dir)
        train = idx("train-images-idx3-ubyte.gz")
        test = idx("t10k-images-idx3-ubyte.gz")
        A.n = min(A.n, len(train))
        A.queries = min(A.queries, len(test))
        A.dims = train.shape[1]
        X = train[:A.n].astype(np.float32)  # pixel values 0..255, l2_norm
        Q = test[:A.queries].astype(np.float32)
        XS = train[:A.n].astype(np.int64)   # integers: exact and short in JSON
        QS = test[:A.queries].astype(np.int64)
    XF, QF = X, Q
    make_views()


TIE_CAP = 10000  # at most this many ids tied within a query's k-th distance are kept (logged when it bites)


def _prep(v, metric, lib):
    """Rows as float64 for the exact search of `metric`: l2 as they are; cos normalized (l2 then orders as cosine);
    hamming: packed bits as +-1 (l2 = 4 x hamming, exact integers). lib: numpy, or (torch, device)."""
    if lib is np:
        out = bits_pm1(v).astype(np.float64) if metric == "hamming" else v.astype(np.float64)
        if metric == "cos":
            out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out
    torch, dev = lib
    t = torch.from_numpy(np.ascontiguousarray(bits_pm1(v) if metric == "hamming" else v)).to(dev)
    t = t.to(torch.float64)
    if metric == "cos":
        t /= t.norm(dim=1, keepdim=True)
    return t


def exact_topk(Xd, Qd, k, keep=None, metric="l2", tie_eps=None):
    """Exact top-k ids by `metric` (l2, cos, hamming on packed bits), in float64 (torch on the GPU if possible, else
    numpy), queries in chunks: (ids [queries, k], how, ties). ties (when tie_eps is not None): per query every id whose
    distance is within tie_eps of the k-th (at most TIE_CAP), for integer metrics where equal distances are common."""
    ties = [] if tie_eps is not None else None
    try:
        import torch
        # GV_GT_TORCH_DEVICE=cpu: the torch path without a GPU (to test it where there is none)
        dev = torch.device(os.environ.get("GV_GT_TORCH_DEVICE", "cuda"))
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("no cuda")
        xs = _prep(Xd, metric, (torch, dev))
        xn = (xs * xs).sum(1)
        km = None if keep is None else torch.from_numpy(keep).to(dev)
        out = []
        for s in range(0, len(Qd), 128):
            q = _prep(Qd[s:s + 128], metric, (torch, dev))
            d = (q * q).sum(1, keepdim=True) - 2 * q @ xs.T + xn[None, :]
            if km is not None:
                d.masked_fill_(~km[None, :], float("inf"))
            vals, idx = torch.topk(d, k, largest=False)
            out.append(idx.cpu().numpy())
            if ties is not None:
                m = d <= (vals[:, -1:] + tie_eps)
                cnt = m.sum(1).cpu().numpy()
                cols = m.nonzero(as_tuple=True)[1].cpu().numpy()
                ties.extend(r[:TIE_CAP] for r in np.split(cols, np.cumsum(cnt)[:-1]))
            del d
        del xs, xn, km
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        return np.concatenate(out), "torch-" + dev.type, ties
    except Exception as e:  # no torch / no GPU: numpy (the reason is logged with the ground truth's "how")
        why = "%s: %s" % (type(e).__name__, str(e)[:120])
        ties = [] if tie_eps is not None else None
        xs = _prep(Xd, metric, np)
        xn = (xs * xs).sum(1)
        out = []
        step = max(1, int(2e8 // max(1, len(xs))))
        for s in range(0, len(Qd), step):
            q = _prep(Qd[s:s + step], metric, np)
            d = (q * q).sum(1)[:, None] - 2 * q @ xs.T + xn[None, :]
            if keep is not None:
                d[:, ~keep] = np.inf
            part = np.argpartition(d, k, axis=1)[:, :k]
            order = np.take_along_axis(d, part, 1).argsort(1)
            ids = np.take_along_axis(part, order, 1)
            out.append(ids)
            if ties is not None:
                thr = np.take_along_axis(d, ids[:, -1:], 1) + tie_eps
                ties.extend(np.nonzero(row <= t)[0][:TIE_CAP] for row, t in zip(d, thr[:, 0]))
        return np.concatenate(out), "numpy (no torch-cuda: %s)" % why, ties


def ground_truth(et=None):
    """The exact top-k of element type et's data (default: the current one) in its own metric, with every filter
    and (for the ceilings) on the first 2,000 vectors; integer metrics keep the ties (exact_topk)."""
    et = et or ET
    v = VIEWS[et]
    t0 = time.time()
    G, tie_eps = v["GT"], v["tie_eps"]
    ids, how, ties = exact_topk(v["X"], v["Q"], A.k, metric=v["metric"], tie_eps=tie_eps)
    v["topk"] = ids  # the strict top-k, for the overlap with float's
    G[("all", 0)] = ties if ties is not None else ids
    f = np.arange(A.n) % 100
    for p in A.filters:
        r = exact_topk(v["X"], v["Q"], A.k, keep=f < p, metric=v["metric"], tie_eps=tie_eps)
        G[("all", p)] = r[2] if r[2] is not None else r[0]
    if et == A.element_type and any(s in A.systems for s in ("ceiling", "gpuceiling", "bigceiling")):
        r = exact_topk(v["X"][:2000], v["Q"], A.k, metric=v["metric"], tie_eps=tie_eps)
        G[("tiny", 0)] = r[2] if r[2] is not None else r[0]
        G[("big", 0)] = [row * big_stride() for row in G[("tiny", 0)]]  # document j * stride carries vector j
    extra = {}
    if ties is not None:
        sizes = np.array([len(t) for t in ties])
        extra = {"tie_set_median": int(np.median(sizes)), "tie_set_max": int(sizes.max()),
                 "tie_sets_capped": int((sizes >= TIE_CAP).sum())}
    if et != "float" and "float" in VIEWS and "topk" in VIEWS["float"]:
        # the share of float's exact top-k among this type's exact nearest (ties included: deterministic)
        fl = VIEWS["float"]["topk"]
        extra["overlap_with_float_topk"] = round(float(np.mean([len(set(a.tolist()) & set(b.tolist())) / A.k
                                                                for a, b in zip(G[("all", 0)], fl)])), 4)
    log(step="ground_truth", dataset=A.dataset, element_type=et, metric=v["metric"], similarity=v["similarity"],
        n=A.n, dims=A.dims, queries=A.queries, k=A.k, filters=A.filters, how=how, s=round(time.time() - t0, 2),
        **({"byte_scale": v["scale"]} if "scale" in v else {}), **extra)
    if extra:
        say("ground truth %s (%s): %s" % (et, v["metric"], ", ".join("%s %s" % kv for kv in extra.items())))


# ---------------------------------------------------------------- loading

MAPPINGS = {
    "gpu": lambda d: {"type": "gpu_vector", "dims": d, "similarity": "l2_norm", "index_options": {"type": "flat"}},
    # default nlist (about sqrt(segment vectors)) and nprobe (about nlist / 16); num_candidates above 100 probes more
    "ivf": lambda d: {"type": "gpu_vector", "dims": d, "similarity": "l2_norm", "index_options": {"type": "ivf_flat"}},
    # default pq_m (dims / 4 up to 256 dims, else dims / 8) and pq_bits (8); 4-16 x num_candidates candidates
    # re-ranked with the raw vectors (more for coarser codes)
    "ivfpq": lambda d: {"type": "gpu_vector", "dims": d, "similarity": "l2_norm", "index_options": {"type": "ivf_pq"}},
    # default degree 32, build_degree 64, search_width 64; the beam is max(search_width, num_candidates) wide
    "graph": lambda d: {"type": "gpu_vector", "dims": d, "similarity": "l2_norm", "index_options": {"type": "graph"}},
    "gpuceiling": lambda d: {"type": "gpu_vector", "dims": d, "similarity": "l2_norm", "index_options": {"type": "flat"}},
    "hnsw": lambda d: {"type": "dense_vector", "dims": d, "similarity": "l2_norm", "index": True,
                       "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100}},
    "ceiling": lambda d: {"type": "dense_vector", "dims": d, "similarity": "l2_norm", "index": True,
                          "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100}},
    "bigceiling": lambda d: {"type": "dense_vector", "dims": d, "similarity": "l2_norm", "index": True,
                             "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100}},
    "int8": lambda d: {"type": "dense_vector", "dims": d, "similarity": "l2_norm", "index": True,
                       "index_options": {"type": "int8_hnsw", "m": 16, "ef_construction": 100}},
    # Elasticsearch's default index type at 768 dims (its default rescoring)
    "bbq": lambda d: {"type": "dense_vector", "dims": d, "similarity": "l2_norm", "index": True,
                      "index_options": {"type": "bbq_hnsw", "m": 16, "ef_construction": 100}},
}


class Skip(Exception):
    """A system that does not exist for this element type (or that the node refused to create): logged, not run."""


def combination_skip(system, et):
    """Why `system` is not run with element type et, or None. Quantized dense_vector index types are for float
    vectors; gpu_vector refuses ivf_pq over bit vectors (issue 38: PQ codes of sign bits do not approximate hamming).
    bfloat16 is float-like: tried, and skipped only if the node refuses the mapping."""
    if et in ("byte", "bit") and system in ("int8", "bbq"):
        return "dense_vector %s is for float vectors only (element_type %s)" % (MAPPINGS[system](8)["index_options"]["type"], et)
    if et == "bit" and system == "ivfpq":
        return "gpu_vector refuses ivf_pq over bit vectors"
    return None


def mapping(system, et):
    """The field mapping of `system` for element type et (float: exactly as before), with et's similarity."""
    m = MAPPINGS[system](A.dims)
    m["similarity"] = VIEWS[et]["similarity"] if et in VIEWS else m["similarity"]
    if et != "float":
        m["element_type"] = et
    if system in GPU_SYSTEMS and system != "gpuceiling":
        m["index_options"].update(gpu_options())
    return m


def gpu_options():
    """--gpu-options as a dict ({} when not given)."""
    return json.loads(A.gpu_options) if A.gpu_options else {}


def options_suffix(system):
    """The index name's suffix for --gpu-options (e.g. _pq_m192), '' without them or for other systems."""
    if not A.gpu_options or system not in GPU_SYSTEMS or system == "gpuceiling":
        return ""
    return "".join("_%s%s" % (k, v) for k, v in sorted(gpu_options().items())).lower()


def big_stride():
    """bigceiling: every big_stride()-th of the --n documents carries one of the knn ceiling's 2,000 vectors."""
    return max(1, A.n // 2000)


def _bulk_worker(index, lo, hi, batch, done, err, stride=0):
    """Documents lo..hi: document i carries vector i, or (stride > 0) vector i / stride when stride divides i and
    nothing otherwise."""
    c = Conn(A.host, A.port)
    for s in range(lo, hi, batch):
        e = min(hi, s + batch)
        lines = []
        for i in range(s, e):
            lines.append('{"index":{"_id":"%d"}}' % i)
            if stride == 0:
                lines.append('{"v":%s,"f":%d}' % (json.dumps(XS[i].tolist()), i % 100))
            elif i % stride == 0 and i // stride < 2000:
                lines.append('{"v":%s,"f":%d}' % (json.dumps(XS[i // stride].tolist()), i % 100))
            else:
                lines.append('{"f":%d}' % (i % 100))
        st, body = c.call(Conn.build("POST", "/%s/_bulk?filter_path=errors,items.*.error" % index,
                                     "\n".join(lines) + "\n", "application/x-ndjson"))
        if st != 200 or b'"errors":true' in body:
            err.put("bulk error %s %s" % (st, body[:500].decode(errors="replace")))
            return
        with done.get_lock():
            done.value += e - s
    c.close()


def create_and_load(system, index, n):
    req("DELETE", "/" + index)
    props = {"f": {"type": "integer"}}
    if system != "noop":
        props["v"] = mapping(system, ET)
    st, r = req("PUT", "/" + index, {"settings": {"number_of_shards": A.shards, "number_of_replicas": 0, "refresh_interval": "-1"},
                                     "mappings": {"properties": props}})
    if st == 400 and system != "noop":  # a mapping this node does not take (an element type not built yet): skip it
        raise Skip("the node refused the mapping %s: %s" % (json.dumps(props["v"]), json.dumps(r)[:400]))
    if st != 200:
        raise SystemExit("create %s: %s %s" % (index, st, r))
    if system == "noop":
        req("PUT", "/%s/_doc/0?refresh=true" % index, {"f": 0})
        return
    t0 = time.time()
    if n <= 2000 and A.tiny_segments > 1:
        load_in_parts(system, index, n, A.tiny_segments)
        return
    procs = min(A.bulk_procs or min(8, os.cpu_count() or 1), max(1, n // 1000))
    batch = max(100, min(2000, 1_000_000 // (A.dims * 8)))
    done, err = mp.Value("q", 0), mp.Queue()
    step = (n + procs - 1) // procs
    ctx = mp.get_context("fork")
    stride = big_stride() if system == "bigceiling" else 0
    ps = [ctx.Process(target=_bulk_worker, args=(index, i * step, min(n, (i + 1) * step), batch, done, err, stride))
          for i in range(procs)]
    for p in ps:
        p.start()
    last = time.time()
    while any(p.is_alive() for p in ps):
        time.sleep(0.2)
        if not err.empty():
            break
        if time.time() - last >= 5:
            last = time.time()
            say("%s: %d / %d docs, %.0f docs/s" % (index, done.value, n, done.value / (last - t0)))
    for p in ps:
        p.join(timeout=1)
    if not err.empty():
        e = err.get()
        for p in ps:
            if p.is_alive():
                p.terminate()
        log(step="bulk", index=index, error=e)
        if ET != "float":  # documents of an element type the field took but cannot index yet: skip, run the rest
            raise Skip("the node refused the documents: %s" % e[:400])
        raise SystemExit(e)
    t_bulk = time.time() - t0
    t1 = time.time()
    req("POST", "/%s/_refresh" % index)
    st, cnt = req("GET", "/%s/_count" % index)
    log(step="load", system=system, index=index, n=n, bulk_s=round(t_bulk, 1), docs_per_s=round(n / t_bulk),
        refresh_s=round(time.time() - t1, 1), count=cnt.get("count"), segments=segment_count(index))


def load_in_parts(system, index, n, parts):
    """A small index in `parts` segments: each part bulk-loaded, then refreshed (refresh_interval is -1)."""
    t0 = time.time()
    done, err = mp.Value("q", 0), mp.Queue()
    step = (n + parts - 1) // parts
    for lo in range(0, n, step):
        _bulk_worker(index, lo, min(n, lo + step), step, done, err)
        if not err.empty():
            raise SystemExit(err.get())
        req("POST", "/%s/_refresh" % index)
    st, cnt = req("GET", "/%s/_count" % index)
    bulk_s = time.time() - t0
    log(step="load", system=system, index=index, n=n, parts=parts, bulk_s=round(bulk_s, 1),
        docs_per_s=round(n / bulk_s), count=cnt.get("count"), segments=segment_count(index))


def existing_count(index):
    """Documents of `index` after a refresh, or None when it does not exist."""
    st, _ = req("POST", "/%s/_refresh" % index)
    if st != 200:
        return None
    st, cnt = req("GET", "/%s/_count" % index)
    return cnt.get("count") if st == 200 and isinstance(cnt, dict) else None


def segment_count(index):
    st, segs = req("GET", "/_cat/segments/%s?format=json&h=segment" % index)
    return len(segs) if isinstance(segs, list) else None


def settle(index):
    """--settle S: waits until no merge runs on the index and its segment count has held for S seconds (at most
    max(60, 6 S) seconds), and logs the wait. Elasticsearch merges a freshly loaded index, or one reopened after a
    restart, in the background; without the wait two runs of one kept index can measure different segments."""
    t0 = time.time()
    last, since = segment_count(index), t0
    while time.time() - t0 < max(60, 6 * A.settle):
        time.sleep(2)
        st, stats = req("GET", "/%s/_stats/merge" % index)
        running = stats.get("_all", {}).get("primaries", {}).get("merges", {}).get("current", 0) if isinstance(stats, dict) else 0
        count = segment_count(index)
        if count != last or running:
            last, since = count, time.time()
        elif time.time() - since >= A.settle:
            break
    log(step="settle", index=index, segments=last, s=round(time.time() - t0, 1))
    say("%s: settled at %s segments after %.0f s" % (index, last, time.time() - t0))


def gpu_warmup(index):
    """--gpu-warmup: the index's segments made resident by the plugin's warm-up before the first query; logs what it
    did and the resident bytes by part (whole vectors, compact copies, codes, ...)."""
    t0 = time.time()
    st, r = req("POST", "/%s/_gpu_vectors/warmup" % index)
    memory = gpu_stats().get("memory", {})
    log(step="gpu_warmup", index=index, status=st, s=round(time.time() - t0, 1),
        result=(r or {}).get("indices", {}).get(index), resident_bytes=memory.get("resident_bytes"),
        resident_bytes_by_part=memory.get("resident_bytes_by_part"))
    say("%s: warm-up %s in %.1f s, resident %s bytes %s" % (index, st, time.time() - t0, memory.get("resident_bytes"),
                                                          memory.get("resident_bytes_by_part")))


def force_merge(system, index):
    say("%s: force merge to one segment" % index)
    t0 = time.time()
    done = threading.Event()

    def tick():
        while not done.wait(15):
            say("%s: force merge running, %.0f s" % (index, time.time() - t0))
    threading.Thread(target=tick, daemon=True).start()
    st, r = req("POST", "/%s/_forcemerge?max_num_segments=1" % index)
    done.set()
    log(step="forcemerge", system=system, index=index, s=round(time.time() - t0, 1), status=st, segments=segment_count(index))


# ---------------------------------------------------------------- load generator

# what the forked workers see: set before each run
RUN = {}


def knn_body(index, qi, nc, filt):
    knn = {"field": "v", "query_vector": QS[qi].tolist(), "k": A.k, "num_candidates": nc}
    if filt:
        knn["filter"] = {"range": {"f": {"lt": filt}}}
    return {"knn": knn, "_source": False, "size": A.k}


def _thread(requests, gtsets, start, deadline_lo, deadline_hi, stride, first, out):
    c = Conn(A.host, A.port)
    lat, rec, errors, err_first, last_end = [], [], 0, None, 0.0
    i = first
    kind = RUN["kind"]
    while True:
        now = time.time()
        if now >= deadline_hi:  # requests started in the window all count, also when they end after it
            break
        qi = i % len(requests)
        i += stride
        t0 = time.perf_counter()
        try:
            st, body = c.call(requests[qi])
        except Exception as e:  # a dropped connection: count it, reconnect
            st, body = -1, str(e).encode()
            c = Conn(A.host, A.port)
        dt = time.perf_counter() - t0
        if now < deadline_lo:
            continue  # warm-up
        last_end = max(last_end, time.time())
        if st != 200:
            errors += 1
            err_first = err_first or ("%s %s" % (st, body[:300].decode(errors="replace")))
            continue
        lat.append(dt)
        if kind == "knn":
            r = json.loads(body)
            ids = [int(h["_id"]) for h in r.get("hits", {}).get("hits", [])]
            rec.append(len(gtsets[qi].intersection(ids)) / A.k)
        elif kind == "msearch":
            r = json.loads(body)
            for j, resp in enumerate(r.get("responses", [])):
                if "error" in resp:
                    errors += 1
                    err_first = err_first or json.dumps(resp)[:300]
                    continue
                ids = [int(h["_id"]) for h in resp.get("hits", {}).get("hits", [])]
                rec.append(len(gtsets[(qi * A.msearch_size + j) % len(gtsets)].intersection(ids)) / A.k)
    c.close()
    out.append((lat, rec, errors, err_first, last_end))


def _proc(first_client, nthreads, stride, start, q):
    requests, gtsets = RUN["requests"], RUN["gtsets"]
    out = []
    lo, hi = start + A.warmup, start + A.warmup + A.duration
    while time.time() < start:
        time.sleep(0.001)
    c0 = time.process_time()
    ts = [threading.Thread(target=_thread, args=(requests, gtsets, start, lo, hi, stride,
                                                 (first_client + t) * 7919 % len(requests), out)) for t in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    lat = [x for o in out for x in o[0]]
    rec = [x for o in out for x in o[1]]
    q.put((lat, rec, sum(o[2] for o in out), next((o[3] for o in out if o[3]), None), time.process_time() - c0,
           max(o[4] for o in out) - lo))


def node_cpu_seconds():
    """User + system CPU seconds of the Elasticsearch process (GV_ES_PID, set by run-es.sh), or None."""
    pid = os.environ.get("GV_ES_PID")
    if not pid:
        return None
    try:
        with open("/proc/%s/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)
    except (OSError, ValueError, IndexError):
        return None


def run_load(requests, gtsets, kind, clients):
    """Closed loop: `clients` connections, each sending its next request as soon as the last one answered, over
    --procs processes; the first --warmup seconds are not measured, then --duration seconds are."""
    RUN.update(requests=requests, gtsets=gtsets, kind=kind)
    procs = max(1, min(clients, A.procs or max(1, (os.cpu_count() or 2) // 2)))
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    start = time.time() + 0.5 + 0.02 * procs
    ps, c = [], 0
    for p in range(procs):
        nt = clients // procs + (1 if p < clients % procs else 0)
        ps.append(ctx.Process(target=_proc, args=(c, nt, 1, start, q)))
        c += nt
    for p in ps:
        p.start()
    while time.time() < start + A.warmup:
        time.sleep(0.005)
    cpu0, t0 = node_cpu_seconds(), time.time()
    res = [q.get() for _ in ps]
    cpu1, t1 = node_cpu_seconds(), time.time()
    for p in ps:
        p.join()
    lat = np.sort(np.array([x for r in res for x in r[0]]))
    rec = [x for r in res for x in r[1]]
    errors = sum(r[2] for r in res)
    # the window: from its start to the end of the last request started in it (about --duration when requests are
    # short; longer for slow ones such as a big _msearch, which then still count)
    window = max([A.duration] + [r[5] for r in res])
    out = {"clients": clients, "procs": procs, "requests": int(len(lat)), "errors": errors, "window_s": round(window, 2),
           "qps": round(len(lat) / window, 1),
           "p50_ms": round(float(lat[len(lat) // 2]) * 1000, 3) if len(lat) else None,
           "p99_ms": round(float(lat[min(len(lat) - 1, int(len(lat) * 0.99))]) * 1000, 3) if len(lat) else None,
           "loader_cpu_cores": round(sum(r[4] for r in res) / (A.warmup + window), 2)}
    if cpu0 is not None and cpu1 is not None and t1 > t0:
        out["node_cpu_cores"] = round((cpu1 - cpu0) / (t1 - t0), 2)
    if kind != "noop":
        out["recall"] = round(float(np.mean(rec)), 4) if rec else None
    if kind == "msearch":
        out["searches_per_s"] = round(len(lat) * A.msearch_size / window, 1)
    if errors:
        out["first_error"] = next((r[3] for r in res if r[3]), None)
    return out


# ---------------------------------------------------------------- one system

def gpu_stats():
    st, r = req("GET", "/_gpu_vectors/stats/_local")
    if st != 200:
        return {"status": st}
    # one node's section (nodes.<id>); plugins before the stats became a nodes action answered it at the top level
    return next(iter(r["nodes"].values())) if "nodes" in r else r


def _find_sizes(node, prefix=""):
    """Every numeric *_bytes / *_in_bytes leaf of a stats tree, as {"a.b.c": value}."""
    out = {}
    if isinstance(node, dict):
        for k, v in node.items():
            out.update(_find_sizes(v, prefix + k + "."))
    elif isinstance(node, (int, float)) and prefix.rstrip(".").endswith("bytes"):
        out[prefix.rstrip(".")] = node
    return out


def memory_figures(system, index, n):
    """What a vector costs in memory, per system, after a layout was searched: gpu_vector the GPU bytes it holds
    (`_gpu_vectors/stats` resident_bytes / n; other gpu_vector indices of this node count too, so run one at a time:
    the default deletes each index after its run); dense_vector its off-heap sizes from `<index>/_stats` (the
    dense_vector section: by file, vec = raw vectors, vex = HNSW graph, veq = int8 codes, veb = bbq codes), the
    hot share = the graph plus the codes a search reads (quantized: veq/veb; else vec), and for both the
    field's bytes on disk from `_disk_usage?run_expensive_tasks=true` (knn_vectors)."""
    out = {}
    if system in GPU_SYSTEMS:
        mem = gpu_stats().get("memory", {})
        out["gpu_resident_bytes"] = mem.get("resident_bytes")
        out["gpu_resident_segment_fields"] = mem.get("resident_segment_fields")
        if mem.get("resident_bytes") and n:
            out["gpu_bytes_per_vector"] = round(mem["resident_bytes"] / n, 1)
    else:
        st, r = req("GET", "/%s/_stats/dense_vector?filter_path=indices.*.primaries.dense_vector" % index)
        dv = (next(iter(r["indices"].values()))["primaries"].get("dense_vector", {})
              if st == 200 and isinstance(r, dict) and r.get("indices") else {})
        sizes = _find_sizes(dv)
        out["dense_vector_stats"] = dv
        # off-heap sizes by file extension (Elasticsearch 9.x: dense_vector.off_heap.total_<ext>_size_bytes)
        ext = {e: v for e in ("vec", "vex", "veq", "veb", "vemf", "vemq")
               for k, v in sizes.items() if k.endswith("total_%s_size_bytes" % e)}
        total = next((v for k, v in sizes.items() if k.endswith("off_heap.total_size_bytes")), None)
        if total is not None and n:
            out["offheap_bytes_per_vector"] = round(total / n, 1)
        if ext and n:
            out["offheap_by_file_per_vector"] = {e: round(v / n, 1) for e, v in ext.items()}
            codes = ext.get("veb") or ext.get("veq") or ext.get("vec") or 0
            out["hot_bytes_per_vector"] = round((ext.get("vex", 0) + codes) / n, 1)
    if A.no_disk_usage:
        return out
    t0 = time.time()
    st, du = req("POST", "/%s/_disk_usage?run_expensive_tasks=true&filter_path=*.fields.v,*.store_size_in_bytes" % index)
    out["disk_usage_s"] = round(time.time() - t0, 1)
    try:
        fv = next(iter(du.values()))["fields"]["v"]
        out["disk_knn_bytes_per_vector"] = round(fv.get("knn_vectors_in_bytes", 0) / n, 1) if n else None
        out["disk_field_bytes_per_vector"] = round(fv.get("total_in_bytes", 0) / n, 1) if n else None
    except (AttributeError, KeyError, StopIteration, TypeError):
        out["disk_usage_error"] = str(du)[:200]
    return out


def stats_delta(s0, s1):
    try:  # {"gpu": {active, device, unusable_reason}, "memory": {...}, "searches": {...}}
        a, b = s0, s1
        d = {k: b["searches"][k] - a["searches"].get(k, 0) for k in ("gpu", "gpu_queries", "gpu_time_in_millis", "cpu_fallbacks")}
        d["cpu_fallbacks_by_reason"] = {k: v - a["searches"]["cpu_fallbacks_by_reason"].get(k, 0)
                                        for k, v in b["searches"]["cpu_fallbacks_by_reason"].items()
                                        if v - a["searches"]["cpu_fallbacks_by_reason"].get(k, 0)}
        # segment searches answered by their query's pass (7 of 8 when every query over 8 segments is one pass) and
        # those that missed it, per reason (older plugins: no reasons); docs/notes/BENCHMARKS.md section 15b
        searches = b["searches"]["batches"]["searches"] - a["searches"]["batches"]["searches"]
        hits = b["searches"]["speculative_hits"] - a["searches"]["speculative_hits"]
        d["parked_share"] = round(hits / searches, 3) if searches else None
        misses0 = a["searches"].get("speculative_misses_by_reason", {})
        d["speculative_misses_by_reason"] = {k: v - misses0.get(k, 0)
                                             for k, v in b["searches"].get("speculative_misses_by_reason", {}).items()
                                             if v - misses0.get(k, 0)}
        d["active"] = b["gpu"].get("active")
        d["resident_bytes"] = b["memory"]["resident_bytes"]
        d["uploads"] = b["memory"]["uploads"] - a["memory"]["uploads"]
        d["evictions"] = b["memory"]["evictions"] - a["memory"]["evictions"]
        return d
    except (KeyError, TypeError):
        return None


def pass_figures(s0, s1, window_s):
    """What the node's GPU passes did during one measured point (stats before and after it): passes, segment searches a
    pass, host enqueue / device wait / whole pass in us a pass, and the share of the window that passes ran (over 1:
    passes overlapped). Tells whether the host (enqueue under the device lock) or the device bounds a point."""
    try:
        a, b = s0["searches"], s1["searches"]
        passes = b["batches"]["count"] - a["batches"]["count"]
        if passes <= 0:
            return None
        us = lambda src: 1000.0 * (src(b) - src(a)) / passes
        return {"passes": passes,
                "searches_per_pass": round((b["batches"]["searches"] - a["batches"]["searches"]) / passes, 2),
                "enqueue_us": round(us(lambda s: s["batches"]["enqueue_time_in_millis"]), 1),
                "wait_us": round(us(lambda s: s["batches"]["wait_time_in_millis"]), 1),
                "pass_us": round(us(lambda s: s["gpu_time_in_millis"]), 1),
                # passes launched as a captured CUDA graph, and captures (a shape's second pass), during the point
                "graph_launches": b["batches"].get("graph_launches", 0) - a["batches"].get("graph_launches", 0),
                "graph_captures": b["batches"].get("graph_captures", 0) - a["batches"].get("graph_captures", 0),
                "busy": round((b["gpu_time_in_millis"] - a["gpu_time_in_millis"]) / 1000.0 / window_s, 3) if window_s else None}
    except (KeyError, TypeError):
        return None


def measured(is_gpu, fn):
    """fn()'s load result; for GPU systems with the point's pass figures (pass_figures) under "passes"."""
    p0 = gpu_stats() if is_gpu else None
    r = fn()
    if is_gpu:
        r["passes"] = pass_figures(p0, gpu_stats(), r.get("window_s"))
    return r


PAIRED = {}  # the knn ceiling's index kept for --paired: its requests and ground truth


def paired_ceiling(system, clients):
    """With --paired, the knn ceiling measured right now at `clients` (logged as step paired_ceiling), else None."""
    if not PAIRED or system in ("noop", "ceiling", "gpuceiling"):
        return None
    r = run_load(PAIRED["reqs"], PAIRED["gts"], "knn", clients)
    log(step="paired_ceiling", for_system=system, num_candidates=PAIRED["nc"], **r)
    return r


def paired_ceiling_msearch(system, clients):
    """With --paired, the knn ceiling's _msearch measured right now at `clients` (step paired_ceiling_msearch)."""
    if not PAIRED or system in ("noop", "ceiling", "gpuceiling"):
        return None
    r = run_load(PAIRED["msearch_reqs"], PAIRED["gts"], "msearch", clients)
    log(step="paired_ceiling_msearch", for_system=system, num_candidates=PAIRED["nc"], batch=A.msearch_size, **r)
    return r


def msearch_requests(index, nc):
    """_msearch requests of --msearch-size knn searches each on `index` (num_candidates nc), the queries in turn."""
    m = A.msearch_size
    reqs = []
    for b in range(max(1, A.queries // m)):
        lines = []
        for j in range(m):
            lines.append(json.dumps({"index": index}))
            lines.append(json.dumps(knn_body(index, (b * m + j) % A.queries, nc, 0)))
        reqs.append(Conn.build("POST", "/_msearch?filter_path=responses.hits.hits._id,responses.error",
                               "\n".join(lines) + "\n", "application/x-ndjson"))
    return reqs


def warm_up(reqs, gts, kind):
    """Unmeasured load at the most clients for max(2 s, --warmup), so the node's path for these requests is compiled
    (JIT) before the first measured point."""
    dur, A.duration = A.duration, max(2.0, A.warmup)
    run_load(reqs, gts, kind, max(A.clients))
    A.duration = dur


def knn_requests(index, nc, filter_pct):
    """One knn search request per query on `index` (num_candidates nc; filter_pct 0: no filter)."""
    path = "/%s/_search?filter_path=hits.hits._id" % index
    return [Conn.build("POST", path, json.dumps(knn_body(index, qi, nc, filter_pct))) for qi in range(A.queries)]


def truth_sets(gtkey, filter_pct):
    """Each query's exact neighbour ids as a set, for recall: ground truth `gtkey` ("all", "tiny", "big") at
    filter_pct."""
    return [set(int(x) for x in row) for row in GT[(gtkey, filter_pct)]]


def bench(system, index, layout, gtkey):
    is_gpu = system in GPU_SYSTEMS
    # gpu_vector flat is exact: one num_candidates; the approximate types (and dense_vector's) sweep --nc
    ncs = [max(A.k, A.nc[0])] if system in ("gpu", "gpuceiling") else [max(A.k, x) for x in A.nc] if is_gpu else A.nc
    base = dict(system=system, index=index, segments=layout, dataset=A.dataset, n=A.n if gtkey != "tiny" else 2000, dims=A.dims,
                element_type=ET)
    sname = system if ET == "float" else "%s [%s]" % (system, ET)
    if system == "noop":
        reqs = [Conn.build("POST", "/%s/_search?filter_path=took" % index, json.dumps({"query": {"match_all": {}}, "size": 0}))]
        warm_up(reqs, None, "noop")  # the node has just started: its search path is compiled (JIT) first
        for c in A.clients:
            r = run_load(reqs, None, "noop", c)
            log(step="concurrent", **base, **r)
            say("noop %d clients: %.0f q/s, p50 %s ms (load generator %.2f cores, node %s cores)" % (
                c, r["qps"], r["p50_ms"], r["loader_cpu_cores"], r.get("node_cpu_cores")))
        return
    s0 = gpu_stats() if is_gpu else None
    gts = truth_sets(gtkey, 0)
    for nc in ncs:
        reqs = knn_requests(index, nc, 0)
        # warm-up: the first searches upload the segments to the GPU
        c = Conn(A.host, A.port)
        t0 = time.time()
        for qi in range(min(20, A.queries)):
            c.call(reqs[qi])
        c.close()
        say("%s (%s, nc %d): warm-up 20 searches %.2f s" % (index, layout, nc, time.time() - t0))
        # then as the noop: a local check had the ceiling's first points at a third to a half of its later rate
        warm_up(reqs, gts, "knn")
        for cl in A.clients:
            paired = paired_ceiling(system, cl)
            r = measured(is_gpu, lambda: run_load(reqs, gts, "knn", cl))
            if paired:
                r["ceiling_qps"] = paired["qps"]
                r["of_ceiling"] = round(r["qps"] / paired["qps"], 3) if paired["qps"] else None
            log(step="concurrent", num_candidates=nc, **base, **r)
            say("%s %s nc %d, %d clients: %.0f q/s p50 %s ms p99 %s ms recall %s errors %d node CPU %s cores%s" % (
                sname, layout, nc, cl, r["qps"], r["p50_ms"], r["p99_ms"], r.get("recall"), r["errors"],
                r.get("node_cpu_cores"), " (%.0f %% of the paired ceiling's %.0f q/s)" % (100 * r["of_ceiling"], paired["qps"])
                if paired and r.get("of_ceiling") else ""))
            if r.get("passes"):
                say("  passes: %(passes)d, %(searches_per_pass)s segment searches a pass, enqueue %(enqueue_us)s us, "
                    "wait %(wait_us)s us, whole %(pass_us)s us a pass, busy %(busy)s of the window; graph launches "
                    "%(graph_launches)s, captures %(graph_captures)s" % r["passes"])
    nc = ncs[0]
    if gtkey == "all":
        for p in A.filters:
            r = measured(is_gpu, lambda: run_load(knn_requests(index, nc, p), truth_sets("all", p), "knn", A.filter_clients))
            log(step="filtered", num_candidates=nc, selectivity_pct=p, **base, **r)
            say("%s %s filter %d%%, %d clients: %.0f q/s p50 %s ms recall %s" % (sname, layout, p, A.filter_clients, r["qps"], r["p50_ms"], r.get("recall")))
    # _msearch on every index, the knn ceiling's included: issue 7 compares ours with the same _msearch there
    m = A.msearch_size
    reqs = msearch_requests(index, nc)
    for cl in A.msearch_clients:
        paired = paired_ceiling_msearch(system, cl)
        r = measured(is_gpu, lambda: run_load(reqs, gts, "msearch", cl))
        if paired:
            r["ceiling_searches_per_s"] = paired["searches_per_s"]
            r["of_ceiling"] = round(r["searches_per_s"] / paired["searches_per_s"], 3) if paired["searches_per_s"] else None
        log(step="msearch", num_candidates=nc, batch=m, **base, **r)
        say("%s %s _msearch x%d, %d clients: %.0f searches/s, request p50 %s ms, recall %s%s" % (
            sname, layout, m, cl, r["searches_per_s"], r["p50_ms"], r.get("recall"),
            " (%.0f %% of the paired ceiling's %.0f)" % (100 * r["of_ceiling"], paired["searches_per_s"])
            if paired and r.get("of_ceiling") else ""))
    mem = memory_figures(system, index, base["n"])
    log(step="memory", **base, **mem)
    say("%s %s memory: %s" % (index, layout, ", ".join("%s %s" % kv for kv in mem.items() if not isinstance(kv[1], dict))))
    if is_gpu:
        s1 = gpu_stats()
        d = stats_delta(s0, s1)
        log(step="gpu_stats", **base, before=s0, after=s1, delta=d)
        if d:
            say("%s %s: GPU searches %d (queries %d, %d ms on the GPU), CPU fallbacks %d %s, parked share %s, misses %s" % (
                index, layout, d["gpu"], d["gpu_queries"], d["gpu_time_in_millis"], d["cpu_fallbacks"], d["cpu_fallbacks_by_reason"] or "",
                d["parked_share"], d["speculative_misses_by_reason"] or "none"))


def run_system(system, et="float"):
    index = "gvb_" + system + ("" if et == "float" or system == "noop" else "_" + et)  # float: the names as before (--reuse)
    index += options_suffix(system)
    why = combination_skip(system, et)
    if why:
        log(step="skipped", system=system, element_type=et, reason=why)
        say("%s with element_type %s: skipped, %s" % (system, et, why))
        return
    tiny = system in ("ceiling", "gpuceiling")
    n = 2000 if tiny else A.n
    if system != "noop" and n > A.n:
        n = A.n
    t0 = time.time()
    if A.reuse and system != "noop" and existing_count(index) == n:
        log(step="reuse", system=system, index=index, n=n, segments=segment_count(index))
        say("%s: reusing %s (%d docs, %s segments)" % (system, index, n, segment_count(index)))
    else:
        say("%s: loading %d docs into %s" % (system, 0 if system == "noop" else n, index))
        try:
            create_and_load(system, index, n)
        except Skip as e:
            log(step="skipped", system=system, element_type=et, reason=str(e))
            say("%s with element_type %s: skipped, %s" % (system, et, e))
            req("DELETE", "/" + index)
            return
        if A.keep and system != "noop":
            req("POST", "/%s/_flush" % index)  # a restarted node then opens these segments, not a translog replay
    if system == "noop" or (tiny and A.tiny_segments == 1):
        layouts = ["one"]
    else:
        layouts = ["natural", "one"] if A.segments == "both" else [A.segments]
    for layout in layouts:
        if layout == "one" and system != "noop":
            force_merge(system, index)
        elif A.settle and system != "noop":
            settle(index)
        if A.gpu_warmup and system in GPU_SYSTEMS:
            gpu_warmup(index)
        bench(system, index, layout, "tiny" if tiny else "big" if system == "bigceiling" else "all")
    if A.paired and system == "ceiling":
        nc = A.nc[0]
        PAIRED.update(index=index, nc=nc, gts=truth_sets("tiny", 0), reqs=knn_requests(index, nc, 0),
                      msearch_reqs=msearch_requests(index, nc))
        say("--paired: %s kept; measured again before each knn point of the other systems" % index)
    elif not A.keep:
        req("DELETE", "/" + index)
        if system in GPU_SYSTEMS:
            # the GPU memory of the deleted index must come back
            s = None
            for _ in range(20):
                s = gpu_stats()
                if s.get("memory", {}).get("resident_bytes", 0) == 0:
                    break
                time.sleep(0.5)
            mem = s.get("memory", {})
            log(step="gpu_after_delete", system=system, index=index, resident_bytes=mem.get("resident_bytes"),
                resident_segment_fields=mem.get("resident_segment_fields"), returned_to_zero=mem.get("resident_bytes") == 0)
            say("after deleting %s: GPU resident %s bytes in %s segment fields" % (index, mem.get("resident_bytes"), mem.get("resident_segment_fields")))
    log(step="system_done", system=system, element_type=et, s=round(time.time() - t0, 1))


# ---------------------------------------------------------------- summary + plot

LABEL = {"noop": "ES noop (size:0 match_all)", "ceiling": "knn ceiling: dense_vector HNSW, 2,000 vectors",
         "bigceiling": "knn ceiling, large index: the 2,000 vectors among all n documents",
         "gpuceiling": "gpu_vector flat, 2,000 vectors", "gpu": "gpu_vector flat (GPU)",
         "ivf": "gpu_vector ivf_flat (GPU)", "ivfpq": "gpu_vector ivf_pq (GPU)", "graph": "gpu_vector graph (GPU)",
         "hnsw": "dense_vector HNSW m16 efc100", "int8": "dense_vector int8_hnsw m16 efc100",
         "bbq": "dense_vector bbq_hnsw m16 efc100"}


def et_of(r):
    return r.get("element_type", "float")  # runs before element types were all float


def label(system, et, ets):
    """The system's name, with its element type when the rows have more than one (or not float), and the tag of its
    run (--plot-only PATH=TAG: system@TAG)."""
    base, _, tag = system.partition("@")
    return (LABEL.get(base, base) + (" [%s]" % et if base != "noop" and (len(ets) > 1 or et != "float") else "")
            + (" (%s)" % tag if tag else ""))


def memory_cell(r):
    """Bytes a vector: gpu_vector on the GPU; dense_vector the hot off-heap share (graph + the codes searched) and its
    whole off-heap; and the field on disk."""
    if not r:
        return ""
    parts = []
    if r.get("gpu_bytes_per_vector") is not None:
        parts.append("GPU {:,.0f}".format(r["gpu_bytes_per_vector"]))
    if r.get("hot_bytes_per_vector") is not None:
        parts.append("hot {:,.0f}".format(r["hot_bytes_per_vector"]))
    if r.get("offheap_bytes_per_vector") is not None:
        parts.append("off-heap {:,.0f}".format(r["offheap_bytes_per_vector"]))
    if r.get("disk_knn_bytes_per_vector"):
        parts.append("disk {:,.0f}".format(r["disk_knn_bytes_per_vector"]))
    return ", ".join(parts)


def summarize(rows, out):
    conc = [r for r in rows if r.get("step") == "concurrent"]
    keys = []
    for r in conc:
        key = (r["system"], et_of(r), r["segments"], r.get("num_candidates"))
        if key not in keys:
            keys.append(key)
    ets = sorted({et_of(r) for r in conc if r["system"] != "noop"})
    mems = [r for r in rows if r.get("step") == "memory"]
    clients = sorted({r["clients"] for r in conc})
    fsel = sorted({r["selectivity_pct"] for r in rows if r.get("step") == "filtered"})
    mcl = sorted({r["clients"] for r in rows if r.get("step") == "msearch"})
    paired = any(r.get("of_ceiling") for r in conc)
    head = ["system", "segments", "nc", "1 client p50/p99 ms"] + ["q/s %d cl" % c for c in clients] + ["recall@%d" % (A.k if A else 10)] \
        + ["filter %d%% q/s (recall)" % p for p in fsel] + ["_msearch %d cl searches/s" % c for c in mcl] \
        + (["of the paired ceiling at %s cl" % " / ".join(str(c) for c in clients)] if paired else []) \
        + (["bytes a vector"] if mems else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in keys:
        sys_, et, seg, nc = key
        m = lambda step, **kw: next((r for r in rows if r.get("step") == step and r["system"] == sys_ and r["segments"] == seg
                                     and et_of(r) == et and all(r.get(k) == v for k, v in kw.items())), None)
        one = m("concurrent", clients=1, num_candidates=nc)
        cells = [label(sys_, et, ets), seg, str(nc or "")]
        cells.append("%s / %s" % (one["p50_ms"], one["p99_ms"]) if one else "")
        for c in clients:
            r = m("concurrent", clients=c, num_candidates=nc)
            cells.append("{:,.0f}".format(r["qps"]) + (" (%d err)" % r["errors"] if r["errors"] else "") if r else "")
        recs = [r.get("recall") for r in conc if (r["system"], et_of(r), r["segments"], r.get("num_candidates")) == key and r.get("recall") is not None]
        cells.append("%.4f" % min(recs) if recs else "")
        for p in fsel:
            r = m("filtered", selectivity_pct=p)
            cells.append("{:,.0f} ({})".format(r["qps"], r.get("recall")) if r else "")
        for c in mcl:
            r = m("msearch", clients=c)
            cells.append("{:,.0f}".format(r["searches_per_s"]) + (" (%.0f %%)" % (100 * r["of_ceiling"]) if r.get("of_ceiling") else "")
                         if r else "")
        if paired:
            ofs = [m("concurrent", clients=c, num_candidates=nc) for c in clients]
            cells.append(" / ".join("%.0f %%" % (100 * r["of_ceiling"]) if r and r.get("of_ceiling") else "-" for r in ofs))
        if mems:
            cells.append(memory_cell(m("memory")))
        lines.append("| " + " | ".join(cells) + " |")
    extra = []
    for r in rows:
        if r.get("step") == "load":
            extra.append("- load %s: %s docs in %s s (%s docs/s), %s segments" % (r["index"], r["n"], r["bulk_s"], r["docs_per_s"], r["segments"]))
        if r.get("step") == "forcemerge":
            extra.append("- force merge %s: %s s" % (r["index"], r["s"]))
        if r.get("step") == "gpu_stats" and r.get("delta"):
            d = r["delta"]
            extra.append("- %s (%s): GPU searches %s, GPU queries %s, GPU time %s ms, CPU fallbacks %s %s, parked share %s, misses %s" % (
                r["index"], r["segments"], d["gpu"], d["gpu_queries"], d["gpu_time_in_millis"], d["cpu_fallbacks"], d["cpu_fallbacks_by_reason"] or "",
                d.get("parked_share"), d.get("speculative_misses_by_reason") or "none"))
        if r.get("step") == "gpu_after_delete":
            extra.append("- after deleting %s: GPU resident %s bytes (%s segment fields)" % (r["index"], r["resident_bytes"], r["resident_segment_fields"]))
        if r.get("step") == "ground_truth":
            extra.append("- data: %s, n %s, dims %s, %s queries, k %s; exact ground truth by %s in %s s" % (
                r["dataset"], r["n"], r["dims"], r["queries"], r["k"], r["how"], r["s"])
                + ("; element type %s, similarity %s, metric %s%s%s%s" % (
                    et_of(r), r.get("similarity"), r.get("metric"),
                    ", byte scale %s" % r["byte_scale"] if r.get("byte_scale") else "",
                    ", ids within the k-th distance (ties) median %s max %s" % (r["tie_set_median"], r["tie_set_max"]) if "tie_set_median" in r else "",
                    ", its exact top-%s holds %.1f %% of float's" % (r["k"], 100 * r["overlap_with_float_topk"]) if "overlap_with_float_topk" in r else "")
                   if r.get("metric") else ""))
        if r.get("step") == "data_check":
            extra.append("- embedding data %s x %s (seed 38, %s s): median cosine of random pairs %s (p10-p90 %s), of a "
                         "query's nearest document %s (p10-p90 %s, %s queries), variance in the top 8 / 64 principal "
                         "components %s" % (r["n"], r["dims"], r["gen_s"], r["median_pair_cos"], r["pair_cos_p10_p90"],
                                            r["median_nn_cos"], r["nn_cos_p10_p90"], r["nn_sample_queries"], r["var_share_top8_top64"]))
        if r.get("step") == "skipped":
            extra.append("- skipped %s [%s]: %s" % (r["system"], r["element_type"], r["reason"]))
    noop = [r for r in conc if r["system"] == "noop"]
    if noop:
        extra.append("- load generator CPU (cores) at the noop ceiling: " + ", ".join("%d cl: %.2f" % (r["clients"], r["loader_cpu_cores"]) for r in noop))
    text = "\n".join(lines + [""] + extra) + "\n"
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(text)
    print(text, flush=True)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:
        print("no plot (matplotlib not importable: %s); the table above has the numbers" % e, flush=True)
        return
    fig, ax = plt.subplots(figsize=(8, 5))
    for key in keys:
        pts = sorted((r["clients"], r["qps"]) for r in conc if (r["system"], et_of(r), r["segments"], r.get("num_candidates")) == key)
        lbl = label(key[0], key[1], ets) + ("" if key[0] == "noop" else ", " + key[2] + (" seg" if key[2] == "one" else " segs"))
        if key[3] and key[0] not in ("noop", "gpu", "gpuceiling") and len({k[3] for k in keys if k[0] == key[0]}) > 1:
            lbl += ", nc %d" % key[3]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=lbl, linestyle="--" if key[0] in ("noop", "ceiling", "bigceiling") else "-")
    ax.set_xscale("log", base=2)
    ax.set_xticks(clients)
    ax.set_xticklabels([str(c) for c in clients])
    ax.set_xlabel("concurrent clients")
    ax.set_ylabel("queries / s")
    ax.set_title("Elasticsearch knn, k=%d" % (A.k if A else 10))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "qps_vs_clients.png"), dpi=120)
    print("plot: %s" % os.path.join(out, "qps_vs_clients.png"), flush=True)
    plt.close(fig)
    recall_vs_qps(plt, conc, keys, ets, out)


def recall_vs_qps(plt, conc, keys, ets, out):
    """ann-benchmarks style: recall@k (x) against q/s (y, log), one point per system, element type, layout and
    num_candidates, at the most clients every knn system was measured with; a line joins one system's num_candidates."""
    knn = [r for r in conc if r["system"] != "noop" and r.get("recall") is not None]
    if not knn:
        return
    per = {}
    for r in knn:
        per.setdefault((r["system"], et_of(r), r["segments"]), set()).add(r["clients"])
    common = set.intersection(*per.values())
    cl = max(common) if common else max(r["clients"] for r in knn)
    fig, ax = plt.subplots(figsize=(9, 6))
    markers = {"float": "o", "byte": "s", "bit": "^", "bfloat16": "D"}
    colour = {s: "C%d" % i for i, s in enumerate(SYSTEMS)}  # one colour a system, one marker an element type
    for (sys_, et, seg) in per:
        pts = sorted((r["recall"], r["qps"], r.get("num_candidates")) for r in knn
                     if (r["system"], et_of(r), r["segments"]) == (sys_, et, seg) and r["clients"] == cl)
        if not pts:
            continue
        ln, = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=markers.get(et, "o"), color=colour.get(sys_),
                      linestyle="--" if et == "float" and len(ets) > 1 else "-",
                      label="%s, %s" % (label(sys_, et, ets), seg + (" seg" if seg == "one" else " segs")))
        for p in pts:
            if p[2]:
                ax.annotate(str(p[2]), (p[0], p[1]), fontsize=6, textcoords="offset points", xytext=(3, 3), color=ln.get_color())
    ax.set_yscale("log")
    ax.set_xlabel("recall@%d (against each element type's own exact top-%d)" % ((A.k if A else 10,) * 2))
    ax.set_ylabel("queries / s at %d clients" % cl)
    ax.set_title("Elasticsearch knn: recall vs q/s (labels: num_candidates)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "recall_vs_qps.png"), dpi=120)
    plt.close(fig)
    print("plot: %s" % os.path.join(out, "recall_vs_qps.png"), flush=True)


def self_check():
    """--self-check: the data generator, the byte/bit/bfloat16 conversions and the exact ground truth of every metric
    against a plain numpy brute force on tiny data (no node needed)."""
    t0 = time.time()
    rng = np.random.default_rng(5)
    a = embedding_data(3000, 64)
    assert np.array_equal(a, embedding_data(3000, 64)), "embedding data not deterministic"
    assert np.array_equal(embedding_data(3000, 64, chunk=500, procs=1), embedding_data(3000, 64, chunk=500, procs=3)), \
        "embedding data depends on the number of processes"
    nrm = np.linalg.norm(a, axis=1)
    assert np.all(np.abs(nrm - 1) < 1e-3), "embedding vectors not unit length: %s..%s" % (nrm.min(), nrm.max())
    chk = data_check(a[:2800], a[2800:], sample=100)
    say("self-check: embedding 3000 x 64 (small n: the nearest neighbour is farther than at 1M): %s" % chk)
    assert 0.1 < chk["median_pair_cos"] < 0.3, chk
    # byte: one max-abs scale, rounded, in range; the largest |value| becomes 127
    s = byte_scale(a)
    b = to_byte(a, s)
    assert b.dtype == np.int8 and b.min() >= -127 and b.max() <= 127 and np.abs(b).max() == 127
    assert np.all(np.abs(a.astype(np.float64) * s - b) <= 0.5 + 1e-9)
    # bit: the sign bits, packed 8 a byte, first dimension in the high bit, as signed bytes; as hex too
    bits = to_bits(a)
    assert bits.dtype == np.int8 and bits.shape == (3000, 8)
    assert np.array_equal(np.unpackbits(bits.view(np.uint8), axis=1).astype(bool), a > 0)
    row = [int(x) for x in bits[0]]
    assert ((row[0] & 0xFF) >> 7) == int(a[0, 0] > 0)
    assert bytes(x & 0xFF for x in row).hex() == bits[0].view(np.uint8).tobytes().hex()
    # hamming: |pm1(a) - pm1(b)|^2 / 4 == popcount(a xor b)
    pm = bits_pm1(bits).astype(np.int64)
    for i in rng.integers(0, 3000, 20):
        assert np.array_equal(((pm - pm[i]) ** 2).sum(1) // 4, hamming_popcount(bits, bits[i]))
    # bfloat16: low 16 bits zero, the nearest of the two neighbouring bf16 values
    x = rng.standard_normal(10000).astype(np.float32)
    r = bf16_round(x)
    assert not np.any(r.view(np.uint32) & 0xFFFF)
    lo = (x.view(np.uint32) & 0xFFFF0000).view(np.float32)
    hi = ((x.view(np.uint32) & 0xFFFF0000) + 0x10000).view(np.float32)
    assert np.all(np.abs(r.astype(np.float64) - x) <= np.minimum(np.abs(lo.astype(np.float64) - x), np.abs(hi.astype(np.float64) - x)) + 1e-30)
    # exact ground truth per metric against a brute force (python loops over numpy rows), filtered too, ties included
    X, Qd = a[:2000], a[2000:2300]  # 300 queries: three of the torch path's chunks of 128
    keep = np.arange(len(X)) % 100 < 10
    k = 10
    cases = [("float l2", X, Qd, "l2", None, lambda q, x: np.sum((x.astype(np.float64) - q) ** 2, 1)),
             ("float cos", X, Qd, "cos", None, lambda q, x: -(x.astype(np.float64) @ q) / np.linalg.norm(x.astype(np.float64), axis=1) / np.linalg.norm(q)),
             ("byte cos", to_byte(X, s), to_byte(Qd, s), "cos", 1e-9,
              lambda q, x: -(x.astype(np.int64) @ q.astype(np.int64)) / np.sqrt((x.astype(np.int64) ** 2).sum(1) * float((q.astype(np.int64) ** 2).sum()))),
             ("byte l2", to_byte(X, s), to_byte(Qd, s), "l2", 0.5, lambda q, x: ((x.astype(np.int64) - q.astype(np.int64)) ** 2).sum(1)),
             ("bit hamming", to_bits(X), to_bits(Qd), "hamming", 0.5, lambda q, x: hamming_popcount(x, q))]
    for name, xd, qd, metric, eps, dist in cases:
        for kp in (None, keep):
            ids, how, ties = exact_topk(xd, qd, k, keep=kp, metric=metric, tie_eps=eps)
            for qi in range(len(qd)):
                d = dist(qd[qi], xd).astype(np.float64)
                if kp is not None:
                    d[~kp] = np.inf
                kth = np.sort(d)[k - 1]
                # every id returned is within the k-th distance, and they are k distinct ids
                assert len(set(ids[qi])) == k and np.all(d[ids[qi]] <= kth + 1e-9), (name, qi)
                if eps is None:
                    assert set(ids[qi]) == set(np.argsort(d, kind="stable")[:k]) or np.sort(d[ids[qi]])[-1] == kth, (name, qi)
                else:
                    tol = 1e-12 if metric == "cos" else 0
                    assert set(ties[qi].tolist()) == set(np.nonzero(d <= kth + tol)[0].tolist()), (name, qi)
        say("self-check: exact top-%d %s (%s), unfiltered and 10 %% filter: as the brute force%s" % (
            k, name, how, "" if eps is None else ", ties included (median %d ids within the k-th distance)" % np.median([len(t) for t in ties])))
    say("self-check OK (%.1f s)" % (time.time() - t0))


def main():
    global A
    A = parse_args()
    os.makedirs(A.out, exist_ok=True)
    if A.self_check:
        self_check()
        return
    if A.plot_only:
        rows = []
        for entry in A.plot_only.split(","):
            path, _, tag = entry.partition("=")
            with open(path) as f:
                run = [json.loads(l) for l in f if l.strip()]
            for r in run:
                if tag and "system" in r:
                    r["system"] += "@" + tag  # one system under two settings: two rows, two lines
            rows += run
        summarize(rows, A.out)
        return
    open(os.path.join(A.out, "es_bench.jsonl"), "w").close()
    t0 = time.time()
    make_data()
    st, info = req("GET", "/_nodes/_local?filter_path=nodes.*.version,nodes.*.plugins.name,nodes.*.jvm.mem.heap_max_in_bytes,nodes.*.os.available_processors")
    log(step="node", info=info, args={k: v for k, v in vars(A).items()})
    s = gpu_stats()
    log(step="gpu_stats_start", stats=s)
    g = s.get("gpu", {})
    say("GPU: active %s, device %s%s" % (g.get("active"), g.get("device"), ", unusable: %s" % g["unusable_reason"] if g.get("unusable_reason") else ""))
    say("data: %s %d x %d, %d queries, element type %s%s (%.1f s)" % (A.dataset, A.n, A.dims, A.queries, A.element_type,
        " and float" if len(VIEWS) > 1 else "", time.time() - t0))
    if any(x != "noop" for x in A.systems):
        for et in sorted(VIEWS, key=lambda e: e != "float"):  # float first: the others report their overlap with it
            ground_truth(et)
    for et in [A.element_type] + [e for e in VIEWS if e != A.element_type]:
        use_view(et)
        for system in [x for x in SYSTEMS if x in A.systems]:
            if et != A.element_type and system in ("noop", "ceiling", "bigceiling", "gpuceiling"):
                continue  # the node's ceilings once, in the element type asked for
            run_system(system, et)
    if PAIRED and not A.keep:
        req("DELETE", "/" + PAIRED["index"])
    log(step="gpu_stats_end", stats=gpu_stats())
    summarize(RESULTS, A.out)
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
