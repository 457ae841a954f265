// IVF-PQ list scan through precomputed tables (the decomposition of Johnson, Douze, Jegou, "Billion-scale
// similarity search with GPUs", section 5.2, eq. (11)-(13)); GpuIvfPqIndex.java chooses it over ivf_pq.cu's
// full per-pair table whenever the query's table fits in shared memory.
// For L2 with residual codes, vector y = c + r (c its list's centroid, r = sum_j codeword_{j, code_j}, the
// sub-quantizers on disjoint dimensions):
//   ||q - c - r||^2 = ||q - c||^2                 term 1: per (query, list), summed here per probed list
//                   + (||r||^2 + 2 <c, r>)         term 2: per (list, code), i.e. per stored vector
//                   + sum_j -2 <q_j, codeword_j>   term 3: per query, a table of m x 2^bits floats
// Faiss keeps term 2 as a table per list (nlist x m x 2^bits floats) and adds it to term 3 per pair; since it
// depends only on the list and the code, each vector's sum over j is computed once at upload instead
// (gv_ivf_pq_code_terms: one float per vector, codeTerms), so a scan adds one float per vector and reads one
// table per query. Inner product / cosine: <q, c + r> = <q, c> + sum_j <q_j, codeword_j>: term 3 alone
// (unscaled), no term 2.
//  1. gv_ivf_pq_query_tables: term 3 of every query of a block (numQueries x m x 2^bits floats, global memory):
//     block (16 queries, sub-quantizer j), thread c = codeword c; the queries' sub-vectors go through shared
//     memory 32 floats at a time.
//  2. gv_ivf_pq_table_scan_kK: block (query, group of probesPerBlock probes): the query's table to shared memory
//     (read once for all the block's lists), term 1 of each probed list (a warp per list, exact float sums of
//     (q_d - c_d)^2 or q_d c_d), then the lists' codes one vector per lane: key = term1 + codeTerms[v] +
//     sum_j table[j][code_j] (L2, smallest first), or -(term1 + sum_j ...) (inner product); accept mask by
//     ordinal; one WarpSelect queue per warp, merged per block, the group's k best written at slot
//     blockIdx.y of the query's row (outRowStride = groups * k). probesPerBlock = 1 (small batches: nprobe
//     blocks per query) or nprobe (large batches: one block per query, its table read once, not nprobe times).
//  3. gv_ivf_pq_table_keys (small batches, instead of 2): block (query, part of a probed list) appends every
//     accepted code's key and ordinal to the query's row, and the radix selection (select_kernels.cu) keeps the
//     row's k best.
// The sums are in another order than the CPU's (which builds each pair's full table), so values agree with it
// up to float rounding of the terms (GpuIvfPqIndexGpuTest's tolerance).
#include "vector_scan.cuh"

namespace gv {

constexpr int kPqTableQueries = 16;  // queries per block of gv_ivf_pq_query_tables
constexpr int kPqTableChunk = 32;    // sub-vector floats staged per round
constexpr int kPqTableThreads = 256; // one per codeword (2^bits <= 256)

// Term 2 of every stored vector (L2 only): block = list, threads over its positions; codeTerms[v] =
// sum_j sum_d w_d * (w_d + 2 c_d), w = codeword_{j, code_j}, c = the list's centroid (same dimensions).
__device__ __forceinline__ void ivfPqCodeTerms(const IvfPqScanParams& p) {
  const int list = blockIdx.x;
  const long long begin = p.listOffsets[list];
  const long long end = p.listOffsets[list + 1];
  const int m = p.m;
  const int subDims = p.dims / m;
  const float* c = p.centroids + (long long)list * p.dims;
  const int chunks = pqCodeChunks(m);
  for (long long v = begin + threadIdx.x; v < end; v += blockDim.x) {
    float s = 0.f;
    for (int j = 0; j < m; ++j) {
      const float* w = p.codebooks + ((long long)(j << p.bits) + pqCodeByte(p.codes, v, chunks, j)) * subDims;
      const float* cj = c + j * subDims;
      float t = 0.f;
      for (int d = 0; d < subDims; ++d) {
        const float wd = __ldg(w + d);
        t = fmaf(wd, fmaf(2.f, __ldg(cj + d), wd), t);
      }
      s += t;
    }
    p.codeTerms[v] = s;
  }
}

// Term 3 of queries [16 x, 16 x + 16) (x = blockIdx.x) for sub-quantizer j = blockIdx.y:
// tables[(q * m + j) << bits | c] = scale * <q_j, codeword_{j, c}>, scale -2 (L2) or 1 (inner product);
// thread c < 2^bits.
__device__ __forceinline__ void ivfPqQueryTables(const IvfPqScanParams& p) {
  __shared__ float sq[kPqTableQueries][kPqTableChunk];
  const int j = blockIdx.y;
  const long long q0 = (long long)blockIdx.x * kPqTableQueries;
  const int m = p.m;
  const int subDims = p.dims / m;
  const int c = threadIdx.x;
  const bool mine = c < (1 << p.bits);
  const float* w = p.codebooks + ((long long)(j << p.bits) + (mine ? c : 0)) * subDims;
  float acc[kPqTableQueries];
#pragma unroll
  for (int i = 0; i < kPqTableQueries; ++i) acc[i] = 0.f;
  for (int d0 = 0; d0 < subDims; d0 += kPqTableChunk) {  // uniform
    for (int e = threadIdx.x; e < kPqTableQueries * kPqTableChunk; e += blockDim.x) {
      const int qi = e / kPqTableChunk, dd = e % kPqTableChunk;
      const bool in = q0 + qi < p.numQueries && d0 + dd < subDims;
      sq[qi][dd] = in ? p.queries[(long long)(q0 + qi) * p.dims + j * subDims + d0 + dd] : 0.f;
    }
    __syncthreads();
    if (mine) {
      const int len = min(kPqTableChunk, subDims - d0);
      for (int dd = 0; dd < len; ++dd) {
        const float wd = __ldg(w + d0 + dd);
#pragma unroll
        for (int i = 0; i < kPqTableQueries; ++i) acc[i] = fmaf(sq[i][dd], wd, acc[i]);
      }
    }
    __syncthreads();  // sq is restaged next round
  }
  if (!mine) return;
  const float scale = p.metric == 1 ? 1.f : -2.f;
  const long long tableFloats = (long long)m << p.bits;
#pragma unroll
  for (int i = 0; i < kPqTableQueries; ++i) {
    if (q0 + i < p.numQueries) p.tables[(q0 + i) * tableFloats + ((long long)j << p.bits) + c] = scale * acc[i];
  }
}

// Warps of a table-scan block: 8 for K <= 128 (two 100 KB-table blocks per SM still give 16 warps to hide the
// shared-memory and code-load latency), else the k bucket's (their queues need the registers and the merge the
// static shared memory). GpuIvfPqIndex.tableScanThreads computes the same.
template <int K>
struct PqScanWarps {
  static constexpr int value = K <= 128 ? 8 : Bucket<K>::Warps;
};

// Merges the NW warps' queues in shared memory into warp 0's, which writes the first k pairs (best first,
// values times outScale). Every thread calls it (vector_scan.cuh's mergeWarpsAndWrite, for NW warps).
template <int NW, int K, int T>
__device__ __forceinline__ void mergePqWarpsAndWrite(WarpQueue<K, T>& q, float* outK, int* outIdx, int k,
                                                     float outScale) {
  __shared__ float sk[(NW - 1) * K];
  __shared__ int sv[(NW - 1) * K];
  const int warp = threadIdx.x / kWarpSize;
  if (warp > 0) q.store(sk + (warp - 1) * K, sv + (warp - 1) * K);
  __syncthreads();
  if (warp == 0) {
    for (int w = 1; w < NW; ++w) q.mergeShared(sk + (w - 1) * K, sv + (w - 1) * K);
    q.write(outK, outIdx, k, outScale);
  }
}

// Dynamic shared memory of a table-scan block: the table (m << bits floats, rounded up to 4) then term 1 of
// each of the block's probes (probesPerBlock floats). GpuIvfPqIndex.tableScanSharedBytes computes the same.
__device__ __forceinline__ int pqScanTableFloats(int m, int bits) { return ((m << bits) + 3) & ~3; }

// s + table[j][byte] over the 4 code bytes of `word`, j = j0 .. j0 + 3; checked: only the bytes with j < m (the
// last chunk of a code is zero-padded past m).
template <bool Checked>
__device__ __forceinline__ float addWord(float s, unsigned word, int j0, int m, int bits, const float* table) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int j = j0 + i;
    if (!Checked || j < m) s += table[(j << bits) + ((word >> (8 * i)) & 0xffu)];
  }
  return s;
}

// The query's table (term 3) into shared memory: 16-byte loads when it is a whole number of float4 (then every
// table is 16-byte aligned).
__device__ __forceinline__ void loadQueryTable(const IvfPqScanParams& p, int query, float4* table4, int tableFloats) {
  const float* src = p.tables + (long long)query * tableFloats;
  if ((tableFloats & 3) == 0) {
    const float4* src4 = reinterpret_cast<const float4*>(src);
    for (int e = threadIdx.x; e < (tableFloats >> 2); e += blockDim.x) table4[e] = __ldg(src4 + e);
  } else {
    float* table = reinterpret_cast<float*>(table4);
    for (int e = threadIdx.x; e < tableFloats; e += blockDim.x) table[e] = __ldg(src + e);
  }
}

// Term 1 of the query's probes p0 .. p0 + probes - 1 into base[0 ..]: warp w takes probes w, w + warps, ...
// (exact float sums of (q_d - c_d)^2, or q_d c_d); 0 for a probe without a list.
__device__ __forceinline__ void probeTerms(const IvfPqScanParams& p, int query, int p0, int probes, float* base) {
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int warps = blockDim.x / kWarpSize;
  const bool ip = p.metric == 1;
  const float* qrow = p.queries + (long long)query * p.dims;
  for (int i = warp; i < probes; i += warps) {
    const int list = p.probes[(long long)query * p.nprobe + p0 + i];
    float s = 0.f;
    if (list >= 0) {
      const float* c = p.centroids + (long long)list * p.dims;
      for (int d = lane; d < p.dims; d += kWarpSize) {
        const float x = __ldg(qrow + d), cd = __ldg(c + d);
        if (ip) {
          s = fmaf(x, cd, s);
        } else {
          const float t = x - cd;
          s = fmaf(t, t, s);
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFullMask, s, o);
    }
    if (lane == 0) base[i] = s;
  }
}

// s0 / s1 + table[j][byte] over the 16 sub-codes of chunk x (sub-codes j0 .. j0 + 15; checked: those below m).
template <bool Checked>
__device__ __forceinline__ void addChunk(float& s0, float& s1, const uint4& x, int j0, int m, int bits,
                                         const float* table) {
  s0 = addWord<Checked>(s0, x.x, j0, m, bits, table);
  s1 = addWord<Checked>(s1, x.y, j0 + 4, m, bits, table);
  s0 = addWord<Checked>(s0, x.z, j0 + 8, m, bits, table);
  s1 = addWord<Checked>(s1, x.w, j0 + 12, m, bits, table);
}

// Chunks of a code loaded at once, before the first is scored (each kernel comes in two builds). Why: a block of
// these scans holds a 98 KB table at 768 dimensions, so an SM runs 8-16 warps, and with one chunk loaded at a time
// each code waited out its six loads one after another: 72 % of the schedulers' cycles had no eligible warp, most of
// them waiting on those loads (ncu, 2M x 768, k = 320). Eight cover codes of up to 128 bytes with one wait (-27 % of
// a 10k batch's GPU time there); loading the next position's code a step ahead as well measured no faster. But the
// eight chunks' 32 registers cost the short codes of 128 dimensions (32 bytes, two chunks) blocks an SM: 4 -> 3 for
// k512 (+19 % there), 4 -> 2 for k64; so codes of at most kPqShortCodeChunks chunks take the "_short" kernels, which
// load two at a time (GpuIvfPqIndex.tableScanKernel, forCodes). Both builds score every code length.
constexpr int kPqChunksInFlight = 8;
constexpr int kPqShortCodeChunks = 2;  // GpuIvfPqIndex.SHORT_CODE_CHUNKS

// s0 / s1 + the sub-codes of chunks c0 .. c0 + C - 1 (those below chunks) held in x.
template <int C>
__device__ __forceinline__ void addChunks(float& s0, float& s1, const uint4 (&x)[C], int c0, int chunks, int whole,
                                          int m, int bits, const float* table) {
#pragma unroll
  for (int i = 0; i < C; ++i) {
    const int c = c0 + i;
    if (c < whole) {
      addChunk<false>(s0, s1, x[i], c * kPqCodeChunkBytes, m, bits, table);
    } else if (c < chunks) {  // the padded last chunk
      addChunk<true>(s0, s1, x[i], c * kPqCodeChunkBytes, m, bits, table);
    }
  }
}

// The key of the code at position v of a list whose term 1 is term1: term1 + codeTerms[v] + sum_j
// table[j][code_j] (L2, smallest first), or -(term1 + sum_j ...) (inner product). The code is read in 16-byte
// chunks of the interleaved layout (common.cuh: the lanes of a warp, at consecutive positions, read 512 contiguous
// bytes), C at a time; two sums for two independent add chains. Callers score accepted positions only (a filter's
// rejected codes cost no lookups).
template <int C>
__device__ __forceinline__ float codeKey(const IvfPqScanParams& p, long long v, const float* table, float term1) {
  const int m = p.m;
  const int bits = p.bits;
  const int chunks = pqCodeChunks(m);
  const int whole = m / kPqCodeChunkBytes;  // chunks without padding
  const float codeTerm = p.metric == 1 ? 0.f : p.codeTerms[v];
  float s0 = 0.f, s1 = 0.f;
  for (int c0 = 0; c0 < chunks; c0 += C) {
    uint4 x[C];
#pragma unroll
    for (int i = 0; i < C; ++i) {
      if (c0 + i < chunks) x[i] = __ldg(pqCodeChunk(p.codes, v, chunks, c0 + i));
    }
    addChunks<C>(s0, s1, x, c0, chunks, whole, m, bits, table);
  }
  const float s = s0 + s1;
  return p.metric == 1 ? -(term1 + s) : term1 + (codeTerm + s);
}

// The scans' step for position v of a list ending at end whose term 1 is term1: its key (codeKey) and its ordinal in
// id when v is in the list and its vector accepted, else +inf and -1. Only accepted codes are scored (a filter's
// rejected codes cost no lookups); unfiltered, accepted() is true without the ordinal's load.
template <int C>
__device__ __forceinline__ float positionKey(const IvfPqScanParams& p, long long v, long long end,
                                             const unsigned long long* accept, const float* table, float term1,
                                             int& id) {
  id = -1;
  if (v >= end) return GV_INF;
  const int ord = p.ords[v];
  if (!accepted(accept, ord)) return GV_INF;
  id = ord;
  return codeKey<C>(p, v, table, term1);
}

template <int K, int C>
__device__ __forceinline__ void ivfPqTableScan(const IvfPqScanParams& p) {
  constexpr int NW = PqScanWarps<K>::value;
  extern __shared__ float4 pqScanShared4[];
  float* table = reinterpret_cast<float*>(pqScanShared4);
  float* base = table + pqScanTableFloats(p.m, p.bits);  // term 1 per probe of the group
  const int query = blockIdx.x;
  const int p0 = blockIdx.y * p.probesPerBlock;
  const int probes = min(p.probesPerBlock, p.nprobe - p0);
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x & (kWarpSize - 1);
  loadQueryTable(p, query, pqScanShared4, p.m << p.bits);
  probeTerms(p, query, p0, probes, base);
  __syncthreads();  // the table and the terms 1 are in
  const unsigned long long* accept = p.acceptBits != nullptr ? p.acceptBits + query * p.acceptRowWords : nullptr;
  WarpQueue<K, Bucket<K>::T> q;
  // threshold at the k-th value (fewer insertions), but at the bucket's K-th for K = 2048: a run-time k-th
  // position there made nvcc spill (255 registers, the 64-register warp queue's select chain)
  if (K == 2048) q.init(); else q.init(p.k);
  for (int i = 0; i < probes; ++i) {  // uniform
    const int list = p.probes[(long long)query * p.nprobe + p0 + i];
    if (list < 0) continue;  // no list (a NaN query): nothing to add
    const long long begin = p.listOffsets[list];
    const long long end = p.listOffsets[list + 1];
    const float term1 = base[i];
    for (long long b = begin + warp * kWarpSize; b < end; b += NW * kWarpSize) {  // uniform per warp
      int id;
      const float key = positionKey<C>(p, b + lane, end, accept, table, term1, id);
      q.add(key, id);
      q.check();
    }
  }
  q.flush();
  const long long o = (long long)query * p.outRowStride + (long long)blockIdx.y * p.k;
  mergePqWarpsAndWrite<NW>(q, p.outK + o, p.outIdx + o, p.k, p.metric == 1 ? -1.f : 1.f);
}

// The small-batch scan (GpuIvfPqIndex.keysSearch): block (query, probe x partsPerList) appends every accepted code
// of its part of the probed list as (key, ordinal) to the query's row of outK / outIdx (outRowStride apart, keys as
// codeKey: smaller is better), at the row's count rowLengths[query] (one atomic per block and step); the radix
// selection (select_kernels.cu) then keeps the row's k best. No queue: one query's lists cost a WarpSelect queue per
// list and two merge levels at large k. A list is split into parts of at least kPqKeysMinCodes codes: with a block
// per list, one query over 16 lists of 10M clustered vectors took 93 us (ncu), the largest list's block alone.
// A NaN key is dropped (it would never be selected). kPqKeysThreads threads.
constexpr int kPqKeysThreads = 256;
constexpr int kPqKeysMinCodes = 1024;  // GpuIvfPqIndex.KEYS_MIN_CODES_PER_BLOCK

// One step of the keys scans: every thread's (key, ordinal), kept unless the key is +inf or NaN (no code, not
// accepted), goes to the query's row (row .. row + outRowStride) at places that thread 0 reserves for the step's kept
// pairs with reserve(total) (returns the first place): each warp's place is the block's kept count before it, each
// lane's its rank among its warp's kept lanes. Pairs past the row's end are dropped. Every thread of the block calls
// it (two barriers); warpKept and stepBase are the caller's shared memory.
template <typename Reserve>
__device__ __forceinline__ void appendKeys(const IvfPqScanParams& p, long long row, float key, int ord, int* warpKept,
                                           int& stepBase, Reserve reserve) {
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int warp = threadIdx.x / kWarpSize;
  const bool keep = key < GV_INF;  // false for NaN, for +inf and past the list
  const unsigned kept = __ballot_sync(kFullMask, keep);
  if (lane == 0) warpKept[warp] = __popc(kept);
  __syncthreads();
  if (threadIdx.x == 0) {
    int total = 0;
    for (int w = 0; w < (int)(blockDim.x / kWarpSize); ++w) {
      const int c = warpKept[w];
      warpKept[w] = total;
      total += c;
    }
    stepBase = reserve(total);
  }
  __syncthreads();
  const long long at = (long long)stepBase + warpKept[warp] + __popc(kept & ((1u << lane) - 1));
  if (keep && at < p.outRowStride) {
    p.outK[row + at] = key;
    p.outIdx[row + at] = ord;
  }
}

template <int C>
__device__ __forceinline__ void ivfPqTableKeys(const IvfPqScanParams& p, int partsPerList) {
  extern __shared__ float4 pqScanShared4[];
  float* table = reinterpret_cast<float*>(pqScanShared4);
  float* base = table + pqScanTableFloats(p.m, p.bits);
  const int query = blockIdx.x;
  const int probe = blockIdx.y / partsPerList;
  const int part = blockIdx.y - probe * partsPerList;
  const int list = p.probes[(long long)query * p.nprobe + probe];
  if (list < 0) return;  // uniform: no list (a NaN query)
  const long long listBegin = p.listOffsets[list];
  const long long listEnd = p.listOffsets[list + 1];
  const long long per = max((long long)kPqKeysMinCodes, (listEnd - listBegin + partsPerList - 1) / partsPerList);
  const long long begin = listBegin + part * per;
  const long long end = min(listEnd, begin + per);
  if (begin >= end) return;  // uniform: a part past the list's end, before the table's load
  loadQueryTable(p, query, pqScanShared4, p.m << p.bits);
  probeTerms(p, query, probe, 1, base);
  __syncthreads();
  const unsigned long long* accept = p.acceptBits != nullptr ? p.acceptBits + query * p.acceptRowWords : nullptr;
  const float term1 = base[0];
  const long long row = (long long)query * p.outRowStride;
  // the block's kept keys of each step get their places with one atomic on the row's count (one per warp and
  // step serialised on that address: 34 us for one query's 63 lists, ncu)
  __shared__ int warpKept[kPqKeysThreads / kWarpSize];
  __shared__ int stepBase;
  for (long long b = begin; b < end; b += blockDim.x) {  // uniform
    int ord;
    const float key = positionKey<C>(p, b + threadIdx.x, end, accept, table, term1, ord);
    appendKeys(p, row, key, ord, warpKept, stepBase,
               [&](int total) { return total > 0 ? atomicAdd(p.rowLengths + query, total) : 0; });
  }
}

// The keys scan of a large batch at large k (GpuIvfPqIndex.keysBlockQueries): block = query. The same keys as
// ivfPqTableKeys, but the block loads its query's table once for all the query's probed lists (a block per (query,
// list) loads it once per list: at 768 dimensions, 98 KB a table, as many bytes as the list's codes) and is its
// row's only writer, so the row's count lives in shared memory and is stored once at the end. Why not the queues
// of ivfPqTableScan: at k in the hundreds their WarpSelect queues bound it (2M x 768, 16 of 1,414 lists, k = 320:
// 90 % of a batch's GPU time in gv_ivf_pq_table_scan_k512, 28 % of the SMs' throughput and 18 % of DRAM's, ncu).
template <int C>
__device__ __forceinline__ void ivfPqTableKeysGrouped(const IvfPqScanParams& p) {
  extern __shared__ float4 pqScanShared4[];
  float* table = reinterpret_cast<float*>(pqScanShared4);
  float* base = table + pqScanTableFloats(p.m, p.bits);  // term 1 of each probe
  const int query = blockIdx.x;
  __shared__ int warpKept[kPqKeysThreads / kWarpSize];
  __shared__ int stepBase;
  __shared__ int rowCount;
  if (threadIdx.x == 0) rowCount = 0;
  loadQueryTable(p, query, pqScanShared4, p.m << p.bits);
  probeTerms(p, query, 0, p.nprobe, base);
  __syncthreads();  // the table, the terms 1 and the count are in
  const unsigned long long* accept = p.acceptBits != nullptr ? p.acceptBits + query * p.acceptRowWords : nullptr;
  const long long row = (long long)query * p.outRowStride;
  for (int i = 0; i < p.nprobe; ++i) {  // uniform
    const int list = p.probes[(long long)query * p.nprobe + i];
    if (list < 0) continue;  // no list (a NaN query)
    const long long end = p.listOffsets[list + 1];
    const float term1 = base[i];
    for (long long b = p.listOffsets[list]; b < end; b += blockDim.x) {  // uniform
      int ord;
      const float key = positionKey<C>(p, b + threadIdx.x, end, accept, table, term1, ord);
      appendKeys(p, row, key, ord, warpKept, stepBase, [&](int total) {
        const int first = rowCount;  // thread 0 alone reads and writes it between the barriers
        rowCount = first + total;
        return first;
      });
    }
  }
  if (threadIdx.x == 0) p.rowLengths[query] = rowCount;
}

// Several indexes' small-batch scans in one launch (the segments of a pass that share one candidate selection,
// SharedKeySelection.java; IvfPqScanTable.java writes this layout, passed by value): entry z = blockIdx.z is one
// index's IvfPqScanParams, each with its own queries, probes, tables and rows. The grid covers the largest entry;
// a block past its own entry's queries, sub-quantizers or probes returns at once (uniform). One launch per pass
// instead of two per segment: the host's launches, not the GPU, bounded a pass over many small segments.
constexpr int kPqScanTableEntries = 24;  // 8 + 24 x 152 bytes: within a launch's 4 KB of parameters
using IvfPqScanTable = ParamTable<IvfPqScanParams, kPqScanTableEntries>;
static_assert(sizeof(IvfPqScanTable) == 8 + kPqScanTableEntries * sizeof(IvfPqScanParams),
              "IvfPqScanTable's layout is IvfPqScanTable.java's");

__device__ __forceinline__ void ivfPqQueryTablesTable(const IvfPqScanTable& t) {
  const IvfPqScanParams* p = blockEntry(t);
  if (p == nullptr || (long long)blockIdx.x * kPqTableQueries >= p->numQueries || (int)blockIdx.y >= p->m) return;
  ivfPqQueryTables(*p);
}

template <int C>
__device__ __forceinline__ void ivfPqTableKeysTable(const IvfPqScanTable& t, int partsPerList) {
  const IvfPqScanParams* p = blockEntry(t);
  if (p == nullptr || (int)blockIdx.x >= p->numQueries || (int)blockIdx.y >= p->nprobe * partsPerList) return;
  ivfPqTableKeys<C>(*p, partsPerList);
}

}  // namespace gv

// Stable names for the JCuda driver API. Table scan: 256 threads for k <= 128, else the bucket's 128 (64 for
// k2048); at most two blocks per SM fit 100 KB tables anyway, so the K <= 128 kernels may use 128 registers,
// and k512 / k1024 declare one block per SM as their minimum: with the default bound nvcc capped them at 96 /
// 128 registers and spilled (sm_90, -Xptxas -v); now none of the table-scan kernels spills.
extern "C" {
__global__ void __launch_bounds__(128) gv_ivf_pq_code_terms(gv::IvfPqScanParams p) { gv::ivfPqCodeTerms(p); }
__global__ void __launch_bounds__(gv::kPqTableThreads) gv_ivf_pq_query_tables(gv::IvfPqScanParams p) {
  gv::ivfPqQueryTables(p);
}
// Each scan in two builds (kPqShortCodeChunks): NAME for codes of more than two 16-byte chunks, NAME_short for the
// others.
#define GV_PQ_TABLE_SCAN(K, BOUNDS, SHORT_BOUNDS)                                                                    \
  __global__ void BOUNDS gv_ivf_pq_table_scan_k##K(gv::IvfPqScanParams p) {                                          \
    gv::ivfPqTableScan<K, gv::kPqChunksInFlight>(p);                                                                 \
  }                                                                                                                  \
  __global__ void SHORT_BOUNDS gv_ivf_pq_table_scan_short_k##K(gv::IvfPqScanParams p) {                              \
    gv::ivfPqTableScan<K, gv::kPqShortCodeChunks>(p);                                                                \
  }
// short codes' tables are small (32 KB at 128 dimensions): k <= 128 there may hold four blocks an SM (64 registers)
GV_PQ_TABLE_SCAN(32, __launch_bounds__(256, 2), __launch_bounds__(256, 4))
GV_PQ_TABLE_SCAN(64, __launch_bounds__(256, 2), __launch_bounds__(256, 4))
GV_PQ_TABLE_SCAN(128, __launch_bounds__(256, 2), __launch_bounds__(256, 2))
GV_PQ_TABLE_SCAN(256, __launch_bounds__(128), __launch_bounds__(128))
GV_PQ_TABLE_SCAN(512, __launch_bounds__(128, 1), __launch_bounds__(128, 1))
GV_PQ_TABLE_SCAN(1024, __launch_bounds__(128, 1), __launch_bounds__(128, 1))
GV_PQ_TABLE_SCAN(2048, __launch_bounds__(64), __launch_bounds__(64))
#undef GV_PQ_TABLE_SCAN
__global__ void __launch_bounds__(gv::kPqKeysThreads) gv_ivf_pq_table_keys(gv::IvfPqScanParams p, int partsPerList) {
  gv::ivfPqTableKeys<gv::kPqChunksInFlight>(p, partsPerList);
}
__global__ void __launch_bounds__(gv::kPqKeysThreads) gv_ivf_pq_table_keys_short(gv::IvfPqScanParams p,
                                                                                 int partsPerList) {
  gv::ivfPqTableKeys<gv::kPqShortCodeChunks>(p, partsPerList);
}
// grid (queries); dynamic shared memory: the table and nprobe floats (tableScanSharedBytes(nprobe)).
__global__ void __launch_bounds__(gv::kPqKeysThreads) gv_ivf_pq_table_keys_grouped(gv::IvfPqScanParams p) {
  gv::ivfPqTableKeysGrouped<gv::kPqChunksInFlight>(p);
}
__global__ void __launch_bounds__(gv::kPqKeysThreads) gv_ivf_pq_table_keys_grouped_short(gv::IvfPqScanParams p) {
  gv::ivfPqTableKeysGrouped<gv::kPqShortCodeChunks>(p);
}
// grid (query groups of 16, sub-quantizers, entries) over the largest entry.
__global__ void __launch_bounds__(gv::kPqTableThreads) gv_ivf_pq_query_tables_table(
    const __grid_constant__ gv::IvfPqScanTable t) {
  gv::ivfPqQueryTablesTable(t);
}
// grid (queries, probes x partsPerList, entries) over the largest entry; dynamic shared memory as
// gv_ivf_pq_table_keys' for the largest table.
__global__ void __launch_bounds__(gv::kPqKeysThreads) gv_ivf_pq_table_keys_table(
    const __grid_constant__ gv::IvfPqScanTable t, int partsPerList) {
  gv::ivfPqTableKeysTable<gv::kPqChunksInFlight>(t, partsPerList);
}
__global__ void __launch_bounds__(gv::kPqKeysThreads) gv_ivf_pq_table_keys_table_short(
    const __grid_constant__ gv::IvfPqScanTable t, int partsPerList) {
  gv::ivfPqTableKeysTable<gv::kPqShortCodeChunks>(t, partsPerList);
}
}
