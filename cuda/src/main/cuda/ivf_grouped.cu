// IVF-Flat grouped list scan: the scan step of GpuIvfFlatIndex for large batches, where many queries
// probe each list (Fashion-MNIST, 10k queries, nprobe 8 of 245 lists: ~326 per list). The per-pair
// kernel (ivf_kernels.cu) reads a list's vectors once per (query, list) pair and is bound by memory
// bandwidth; here a block takes a tile of up to kIvfTileQueries (Q = 32) queries that probe the same
// list, reads the list once for all of them, and is bound by arithmetic instead.
//   1. Counting sort of the (query, probe) pairs by list (gv_ivf_group_count, _offsets, _scatter):
//      list sizes, exclusive sums (pair and tile offsets), each pair to its list's slot.
//   2. gv_ivf_grouped_scan_kK: block = (list, tile): the list's vectors stream through shared memory
//      128 at a time, 32 dimensions at a time (two-stage cp.async ring); the 512 threads compute the
//      Q x 128 distances as a register-tiled product (8 queries x 1 vector per thread), the step's
//      distances go to shared memory, and warp w feeds the WarpSelect queues (select.cuh) of the
//      tile's queries w and w + 16.
// Each pair's k best (distance, ordinal) land where the per-pair kernel writes them (query *
// outRowStride + probe * k), so the merge (BlockSelect over each query's nprobe * k) is the same.
// Buckets K = 32..128 only, k <= 128 (GpuIvfFlatIndex scans larger k per pair): three instantiations,
// not seven, for compile time, and at K = 256 two queues per warp made nvcc spill (128 registers a
// thread at most, 512 threads).
#include "select.cuh"

namespace gv {

// ---- 1. the (query, probe) pairs by list ---------------------------------------------------------

// Thread e: pair e (query e / nprobe, probe e % nprobe) takes the next place among its list's pairs.
// A pair with no list (probe -1: a NaN query) is in no tile: its k slots are written empty here, as the
// per-pair kernel writes them.
__device__ __forceinline__ void ivfGroupCount(const IvfScanParams& p, const IvfGroupParams& g) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= (long long)g.numQueries * p.nprobe) return;
  const int list = p.probes[e];
  if (list >= 0) {
    g.ranks[e] = atomicAdd(g.counts + list, 1);
    return;
  }
  const long long o = (e / p.nprobe) * p.outRowStride + (e % p.nprobe) * p.k;
  const float empty = p.metric == 1 ? -GV_INF : GV_INF;
  for (int i = 0; i < p.k; ++i) {
    p.outK[o + i] = empty;
    p.outIdx[o + i] = -1;
  }
}

// One block: exclusive prefix sums over the lists of their pair counts (pairOffsets) and of their tiles,
// ceil(count / Q) (tileOffsets), nlist + 1 entries each. Both sums in one scan of packed 64-bit values,
// tiles in the high word and pairs in the low word: every sum is below 2^31, so no carry crosses.
__device__ __forceinline__ void ivfGroupOffsets(const IvfGroupParams& g) {
  __shared__ unsigned long long warpTotals[kWarpSize];
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  unsigned long long carry = 0;  // the lists of the previous rounds
  for (int base = 0; base < g.nlist; base += blockDim.x) {  // uniform
    const int l = base + threadIdx.x;
    const unsigned c = l < g.nlist ? g.counts[l] : 0u;
    const unsigned long long x = (unsigned long long)((c + kIvfTileQueries - 1) / kIvfTileQueries) << 32 | c;
    unsigned long long before;
    const unsigned long long warpTotal = warpExclusiveSum(x, lane, before);
    if (lane == 0) warpTotals[warp] = warpTotal;
    __syncthreads();
    unsigned long long round = 0;
    for (int w = 0; w < warps; ++w) {
      const unsigned long long t = warpTotals[w];
      if (w < warp) before += t;
      round += t;
    }
    __syncthreads();  // warpTotals is rewritten next round
    if (l < g.nlist) {
      g.pairOffsets[l] = (int)(unsigned)(carry + before);
      g.tileOffsets[l] = (int)((carry + before) >> 32);
    }
    carry += round;
  }
  if (threadIdx.x == 0) {
    g.pairOffsets[g.nlist] = (int)(unsigned)carry;
    g.tileOffsets[g.nlist] = (int)(carry >> 32);
  }
}

// Thread e: pair e to its place in its list's range of pairs (the order within a list is the atomics',
// which only decides which pairs share a tile: each pair's result does not depend on it).
__device__ __forceinline__ void ivfGroupScatter(const IvfScanParams& p, const IvfGroupParams& g) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= (long long)g.numQueries * p.nprobe) return;
  const int list = p.probes[e];
  if (list >= 0) g.pairs[g.pairOffsets[list] + g.ranks[e]] = (int)e;
}

// ---- 2. the grouped scan ---------------------------------------------------------------------------

constexpr int kTileQ = kIvfTileQueries;              // 32: queries (pairs) per tile
constexpr int kGroupedThreads = kIvfGroupedThreads;  // 512: 16 warps
constexpr int kGroupedWarps = kGroupedThreads / kWarpSize;
constexpr int kQueuesPerWarp = kTileQ / kGroupedWarps;  // 2: warp w owns the queues of queries w and w + 16
constexpr int kStepVectors = 128;                    // vectors per step: 4 vector groups of 32 (a lane each)
constexpr int kChunkDims = 32;                       // dimensions per stage of the ring
constexpr int kChunk4 = kChunkDims / 4;
// float4 per staged row: one more than the chunk's 8, so that the 8 lanes of a quarter warp reading
// 8 consecutive rows (LDS.128) hit 8 distinct groups of 4 banks
constexpr int kRow4 = kChunk4 + 1;
constexpr int kGroupQueries = kTileQ / 4;            // queries per query group (4 groups x 4 vector groups = 16 warps)

// Dynamic shared memory (45 KB). The step's keys (a row of 128 per query; inner product: negated) reuse
// the ring stage that the step's last chunk did not use: every warp is done with it, and no copy
// targets it, once that chunk's barrier is passed.
struct GroupedShared {
  float4 vec[2][kStepVectors * kRow4];  // ring stage: the step's vectors, dims [d0, d0 + 32), a row each
  float4 qry[2][kTileQ * kRow4];        // ring stage: the tile's queries, the same dims
};
static_assert(sizeof(GroupedShared) == kIvfGroupedSharedBytes, "IvfGroupParams.SHARED_BYTES");
static_assert(kTileQ * kStepVectors * sizeof(float) <= sizeof(GroupedShared::vec[0]), "keys fit in a ring stage");
static_assert(kTileQ % kGroupedWarps == 0 && kGroupQueries * 4 == kTileQ && kGroupedWarps == 16,
              "16 warps: 4 query groups x 4 vector groups, each warp owning kQueuesPerWarp queues");
static_assert(kStepVectors * kChunk4 % kGroupedThreads == 0 && kTileQ * kChunk4 <= kGroupedThreads,
              "stageChunk: every thread stages the same number of vector pieces, one query piece at most");

// The list whose tiles [tileOffsets[l], tileOffsets[l + 1]) hold `tile`: the last l with
// tileOffsets[l] <= tile (lists without pairs have no tiles; tile < tileOffsets[nlist]).
__device__ __forceinline__ int listOfTile(const IvfGroupParams& g, int tile) {
  int lo = 0, hi = g.nlist - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (g.tileOffsets[mid] <= tile) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Stages floats [d, d + 4) of a row into dst, zeros past dims (a zero in both operands adds nothing to
// either metric): one 16-byte copy when the row is 16-byte aligned (vec4), else up to four 4-byte ones.
__device__ __forceinline__ void stage4(float4* dst, const float* row, int d, int dims, bool vec4) {
  if (vec4) {
    if (d < dims) copyAsync16(dst, row + d); else *dst = make_float4(0.f, 0.f, 0.f, 0.f);
  } else {
    float* f = reinterpret_cast<float*>(dst);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (d + j < dims) copyAsync4(f + j, row + d + j); else f[j] = 0.f;
    }
  }
}

// All threads: starts the copies of dims [d0, d0 + 32) of the step's `rows` vectors (rows from vecRow0,
// dims apart; rows past `rows` are left as they are: their distances are never used) and of this
// thread's query piece (qrow: its query's row, null for threads without one) into ring stage `slot`.
// Thread t stages float4 t % 8 of rows t / 8 + 64 j: 8 threads read 128 consecutive bytes of a row.
__device__ __forceinline__ void stageChunk(GroupedShared& sh, int slot, const float* vecRow0, int rows,
                                           const float* qrow, bool qvec4, int dims, int d0) {
  const int c4 = threadIdx.x % kChunk4;
  const int d = d0 + 4 * c4;
  const bool vec4 = (dims & 3) == 0;
#pragma unroll
  for (int j = 0; j < kStepVectors * kChunk4 / kGroupedThreads; ++j) {
    const int r = threadIdx.x / kChunk4 + j * (kGroupedThreads / kChunk4);
    if (r < rows) stage4(&sh.vec[slot][r * kRow4 + c4], vecRow0 + (long long)r * dims, d, dims, vec4);
  }
  if (qrow != nullptr) stage4(&sh.qry[slot][(threadIdx.x / kChunk4) * kRow4 + c4], qrow, d, dims, qvec4);
}

// acc + the terms of 4 dimensions: products (inner product) or squared differences (L2).
template <bool IP>
__device__ __forceinline__ float addTerms4(float acc, float4 a, float4 b) {
  if (IP) {
    acc = fmaf(a.x, b.x, acc); acc = fmaf(a.y, b.y, acc);
    acc = fmaf(a.z, b.z, acc); acc = fmaf(a.w, b.w, acc);
  } else {
    const float t0 = a.x - b.x, t1 = a.y - b.y, t2 = a.z - b.z, t3 = a.w - b.w;
    acc = fmaf(t0, t0, acc); acc = fmaf(t1, t1, acc);
    acc = fmaf(t2, t2, acc); acc = fmaf(t3, t3, acc);
  }
  return acc;
}

// One ring stage into the thread's 8 accumulators: queries 8 qg .. 8 qg + 7 (one float4 each, the same
// address across the warp: a broadcast) against vector 32 vg + lane. Per 4 dimensions: 9 shared loads
// (12 wavefronts) for 32 (inner product) or 64 (L2) arithmetic instructions; per float read from L2,
// 32 queries' worth of arithmetic. (Two vectors per thread would halve the shared-memory traffic per
// instruction, but their 8 more accumulators made nvcc spill next to the two queues.)
template <bool IP>
__device__ __forceinline__ void accumulateChunk(float (&acc)[kGroupQueries], const float4* vec, const float4* qry,
                                                int qg, int vg, int lane) {
  const float4* x = vec + (vg * kWarpSize + lane) * kRow4;
  const float4* qs = qry + qg * kGroupQueries * kRow4;
  // not unrolled: unrolling let nvcc hoist the next float4s of the 8 queries, which made it spill next
  // to the two queues at K = 64 and 128 (84 % of the issue slots stay arithmetic for L2)
#pragma unroll 1
  for (int d = 0; d < kChunk4; ++d) {
    const float4 a = x[d];
#pragma unroll
    for (int i = 0; i < kGroupQueries; ++i) acc[i] = addTerms4<IP>(acc[i], a, qs[i * kRow4 + d]);
  }
}

// All threads: the keys of the tile's `count` queries against the `rows` (<= 128) vectors from vecRow0
// (squared L2, or the negated inner product: queues keep the smallest); returns where they are: a row
// of kStepVectors per query. Warp w computes query group qg = w / 4 against vector group vg = w % 4,
// and skips the arithmetic when either holds no real query or vector (a short last step, a tile of
// fewer than 32 pairs). Every thread passes this function's barriers; the caller synchronises before
// reading the keys, and again before the next step's copies may overwrite them.
template <bool IP>
__device__ __forceinline__ const float* stepKeys(GroupedShared& sh, const float* vecRow0, int rows, int count,
                                                 const float* qrow, bool qvec4, int dims) {
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int qg = warp / 4, vg = warp % 4;
  const bool active = qg * kGroupQueries < count && vg * kWarpSize < rows;  // warp-uniform
  float acc[kGroupQueries] = {};
  const int chunks = (dims + kChunkDims - 1) / kChunkDims;
  stageChunk(sh, 0, vecRow0, rows, qrow, qvec4, dims, 0);
  commitAsync();
  for (int c = 0; c < chunks; ++c) {
    waitAsync<0>();
    // chunk c is in for every thread, and every thread is done with chunk c - 1, whose stage the next
    // copies refill: one barrier per chunk, the copies of chunk c + 1 under the arithmetic of chunk c
    __syncthreads();
    if (c + 1 < chunks) {
      stageChunk(sh, (c + 1) & 1, vecRow0, rows, qrow, qvec4, dims, (c + 1) * kChunkDims);
      commitAsync();
    }
    if (active) accumulateChunk<IP>(acc, sh.vec[c & 1], sh.qry[c & 1], qg, vg, lane);
  }
  float* keys = reinterpret_cast<float*>(sh.vec[chunks & 1]);  // the stage chunk `chunks - 1` did not use
  if (active) {
#pragma unroll
    for (int i = 0; i < kGroupQueries; ++i) {
      keys[(qg * kGroupQueries + i) * kStepVectors + vg * kWarpSize + lane] = IP ? -acc[i] : acc[i];
    }
  }
  return keys;
}

// Warp: feeds a queue the keys (a row of kStepVectors) of the step's vectors at positions
// [v0, v0 + rows) that its query accepts; ids are ordinals.
template <int K, int T>
__device__ __forceinline__ void feedStep(WarpQueue<K, T>& q, const float* keys, long long v0, int rows,
                                         const int* ords, const unsigned long long* accept) {
  for (int j0 = 0; j0 < rows; j0 += kWarpSize) {  // uniform
    const int j = j0 + q.lane;
    float key = GV_INF;
    int id = -1;
    if (j < rows) {
      const int ord = ords[v0 + j];
      if (accepted(accept, ord)) { key = keys[j]; id = ord; }
    }
    q.add(key, id);
    q.check();
  }
}

// The accept mask of pair `pair`'s query (one per query: acceptRowWords > 0; one for all; or none).
__device__ __forceinline__ const unsigned long long* pairMask(const IvfScanParams& p, int pair) {
  return p.acceptBits != nullptr ? p.acceptBits + (long long)(pair / p.nprobe) * p.acceptRowWords : nullptr;
}

template <int K>
__device__ __forceinline__ void ivfGroupedScan(const IvfScanParams& p, const IvfGroupParams& g) {
  extern __shared__ float4 groupedShared[];
  GroupedShared& sh = *reinterpret_cast<GroupedShared*>(groupedShared);
  const int tile = blockIdx.x;
  if (tile >= g.tileOffsets[g.nlist]) return;  // the grid is an upper bound (uniform per block, no barrier yet)
  const int list = listOfTile(g, tile);
  const int first = g.pairOffsets[list] + (tile - g.tileOffsets[list]) * kTileQ;
  const int count = min(kTileQ, g.pairOffsets[list + 1] - first);
  const long long begin = p.listOffsets[list];
  const long long end = p.listOffsets[list + 1];
  const int warp = threadIdx.x / kWarpSize;
  // threads 0 .. 8 * 32 - 1 stage query piece t % 8 of the tile's query t / 8; rows 16-byte aligned only
  // when the batch's query block is (BatchSearch packs groups back to back)
  const float* qrow = nullptr;
  if (threadIdx.x < kTileQ * kChunk4 && (int)threadIdx.x / kChunk4 < count) {
    qrow = p.queries + (long long)(g.pairs[first + threadIdx.x / kChunk4] / p.nprobe) * p.dims;
  }
  const bool qvec4 = (p.dims & 3) == 0 && (reinterpret_cast<unsigned long long>(p.queries) & 15) == 0;
  // warp w: the queues of the tile's pairs w + 16 h, those that exist (warp-uniform)
  int pair[kQueuesPerWarp];
  WarpQueue<K, Bucket<K>::T> q[kQueuesPerWarp];
#pragma unroll
  for (int h = 0; h < kQueuesPerWarp; ++h) {
    const int slot = warp + h * kGroupedWarps;
    pair[h] = slot < count ? g.pairs[first + slot] : -1;
    q[h].init(p.k);
  }
  const bool ip = p.metric == 1;
  for (long long v0 = begin; v0 < end; v0 += kStepVectors) {  // uniform
    const int rows = (int)min((long long)kStepVectors, end - v0);
    const float* vecRow0 = p.vectors + v0 * p.dims;
    const float* keys = ip ? stepKeys<true>(sh, vecRow0, rows, count, qrow, qvec4, p.dims)
                           : stepKeys<false>(sh, vecRow0, rows, count, qrow, qvec4, p.dims);
    __syncthreads();  // the keys are in
#pragma unroll
    for (int h = 0; h < kQueuesPerWarp; ++h) {
      if (pair[h] >= 0) {
        feedStep(q[h], keys + (warp + h * kGroupedWarps) * kStepVectors, v0, rows, p.ords, pairMask(p, pair[h]));
      }
    }
    __syncthreads();  // the keys are read: the next step's copies may land on them
  }
#pragma unroll
  for (int h = 0; h < kQueuesPerWarp; ++h) {
    if (pair[h] >= 0) {
      q[h].flush();
      const long long o = (long long)(pair[h] / p.nprobe) * p.outRowStride + (long long)(pair[h] % p.nprobe) * p.k;
      q[h].write(p.outK + o, p.outIdx + o, p.k, ip ? -1.f : 1.f);
    }
  }
}

}  // namespace gv

using gv::IvfGroupParams;
using gv::IvfScanParams;
// Stable names for the JCuda driver API. Grouping: 256 threads a pair (count, scatter), one block of 1024
// (offsets). Scan: 512 threads, one block per SM (up to 128 registers a thread: two queues, 8
// accumulators and the staging addresses; at 64, for two blocks, nvcc spilled).
extern "C" {
__global__ void __launch_bounds__(256) gv_ivf_group_count(IvfScanParams p, IvfGroupParams g) {
  gv::ivfGroupCount(p, g);
}
__global__ void __launch_bounds__(1024) gv_ivf_group_offsets(IvfGroupParams g) { gv::ivfGroupOffsets(g); }
__global__ void __launch_bounds__(256) gv_ivf_group_scatter(IvfScanParams p, IvfGroupParams g) {
  gv::ivfGroupScatter(p, g);
}
__global__ void __launch_bounds__(512, 1) gv_ivf_grouped_scan_k32(IvfScanParams p, IvfGroupParams g) {
  gv::ivfGroupedScan<32>(p, g);
}
__global__ void __launch_bounds__(512, 1) gv_ivf_grouped_scan_k64(IvfScanParams p, IvfGroupParams g) {
  gv::ivfGroupedScan<64>(p, g);
}
__global__ void __launch_bounds__(512, 1) gv_ivf_grouped_scan_k128(IvfScanParams p, IvfGroupParams g) {
  gv::ivfGroupedScan<128>(p, g);
}
}
