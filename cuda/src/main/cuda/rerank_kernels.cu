// Exact FP32 re-rank of the TF32 candidate pass (GpuFlatIndex.Precision.TF32_RERANK): the TF32 GEMM + k-select
// picks k' candidates per query; gv_rerank_exact recomputes their keys in FP32 from the raw vectors, a
// BlockSelect pass (inIdx mode, KSelect.java) keeps the k best, and gv_rerank_stats gathers per query what the
// host's certificate needs (CandidateBound.java): the k-th exact key, the k'-th TF32 key and ||q||^2. Queries the
// certificate rejects are searched again on the FP32 path, their rows gathered and their results scattered
// back with gv_copy_rows.
#include "common.cuh"

namespace gv {

// This lane's share of the FP32 key of vector x against the query in shared memory (lanes over the dimensions;
// the caller sums over the warp): squared L2 as the sum of (x_i - q_i)^2, or the inner product. One loop per
// case, so that the loop bodies carry no branch.
template <bool IP, bool VEC4>
__device__ __forceinline__ float laneKey(const float* x, const float4* sq4, int dims, int lane) {
  float acc = 0.f;
  if constexpr (VEC4) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
#pragma unroll 4
    for (int d = lane; d < (dims >> 2); d += kWarpSize) {
      const float4 a = __ldg(x4 + d);
      const float4 b = sq4[d];
      if constexpr (IP) {
        acc = fmaf(a.x, b.x, acc); acc = fmaf(a.y, b.y, acc); acc = fmaf(a.z, b.z, acc); acc = fmaf(a.w, b.w, acc);
      } else {
        const float t0 = a.x - b.x, t1 = a.y - b.y, t2 = a.z - b.z, t3 = a.w - b.w;
        acc = fmaf(t0, t0, acc); acc = fmaf(t1, t1, acc); acc = fmaf(t2, t2, acc); acc = fmaf(t3, t3, acc);
      }
    }
  } else {
    const float* sq = reinterpret_cast<const float*>(sq4);
    for (int d = lane; d < dims; d += kWarpSize) {
      const float a = __ldg(x + d);
      if constexpr (IP) {
        acc = fmaf(a, sq[d], acc);
      } else {
        const float t = a - sq[d];
        acc = fmaf(t, t, acc);
      }
    }
  }
  return acc;
}

// grid (query, part): gridDim.y blocks share a query's candidates (a few queries cannot fill the GPU with one
// block each: one query's 400 candidates took one 4-warp block ~90 us), the query in each block's shared memory.
// Each warp recomputes one candidate's key at a time, the lanes over the dimensions: the candidate's row is read
// coalesced (float4 when dims % 4 == 0: rows are then 16-byte aligned), then a shuffle reduction. Keys as the TF32 pass's: squared L2 as the sum of (x_i - q_i)^2
// (more accurate than the GEMM form), or -x.q. A NaN key (NaN in the data) is never selected afterwards.
// Warp 0 of part 0 also sums ||q||^2 in double (float products are exact there) and stores it rounded up, with the
// last candidate's TF32 key and the least of the chunks' last keys (chunkK keys a chunk, `chunks` of them, from
// p.chunkKeys; +inf without), for the certificate.
// Row `query` of the candidates, against the query at qrow, over the raw vectors at `vectors`.
__device__ __forceinline__ void rerankExactRow(const RerankParams& p, int query, const float* qrow,
                                               const float* vectors, int chunkK, int chunks) {
  extern __shared__ float4 sq4[];  // dims floats, rounded up to float4
  float* sq = reinterpret_cast<float*>(sq4);
  for (int d = threadIdx.x; d < p.dims; d += blockDim.x) sq[d] = qrow[d];
  __syncthreads();
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int warp = threadIdx.x / kWarpSize;
  const int numWarps = blockDim.x / kWarpSize;
  const bool ip = p.metric == 1;
  const bool vec4 = (p.dims & 3) == 0;
  const long long row = (long long)query * p.candidates;
  const int stride = numWarps * gridDim.y;
  for (int c = blockIdx.y * numWarps + warp; c < p.candidates; c += stride) {  // uniform per warp
    const int id = p.candIdx != nullptr ? p.candIdx[row + c] : c;  // none: every vector (GpuFlatIndex.enqueueSmall)
    float acc = 0.f;
    if (id >= 0) {
      const float* x = vectors + (long long)id * p.dims;
      acc = ip ? (vec4 ? laneKey<true, true>(x, sq4, p.dims, lane) : laneKey<true, false>(x, sq4, p.dims, lane))
               : (vec4 ? laneKey<false, true>(x, sq4, p.dims, lane) : laneKey<false, false>(x, sq4, p.dims, lane));
#pragma unroll
      for (int o = kWarpSize / 2; o > 0; o >>= 1) acc += __shfl_xor_sync(kFullMask, acc, o);
    }
    if (lane == 0) p.exactKeys[row + c] = id < 0 ? GV_INF : (ip ? -acc : acc);
  }
  if (warp == 0 && blockIdx.y == 0 && p.stats != nullptr) {
    double s = 0.0;
    for (int d = lane; d < p.dims; d += kWarpSize) s = fma((double)sq[d], (double)sq[d], s);
#pragma unroll
    for (int o = kWarpSize / 2; o > 0; o >>= 1) s += __shfl_xor_sync(kFullMask, s, o);
    float chunkLast = GV_INF;  // a chunk's keys ascend; one that kept fewer than it found ends below +inf
    if (p.chunkKeys != nullptr) {
      const float* last = p.chunkKeys + (long long)query * p.chunkRowStride + chunkK - 1;
      for (int c = lane; c < chunks; c += kWarpSize) chunkLast = fminf(chunkLast, last[(long long)c * chunkK]);
#pragma unroll
      for (int o = kWarpSize / 2; o > 0; o >>= 1) {
        chunkLast = fminf(chunkLast, __shfl_xor_sync(kFullMask, chunkLast, o));
      }
    }
    if (lane == 0) {
      float* st = p.stats + 4LL * query;
      st[1] = p.candKeys[row + p.candidates - 1];
      st[2] = __double2float_ru(s);
      st[3] = chunkLast;
    }
  }
}

// With p.rowsDone, the re-rank selects too (GpuIvfPqIndex.enqueueRerank, a few queries' candidates): the last of
// a row's gridDim.y blocks to finish its keys ranks the row's candidates (rankOrder, by key then id; a NaN or +inf
// key as an empty slot, +inf and id -1) and writes the k best, outScale x key: one launch where a one-query IVF-PQ
// pass took two (10M x 128, 160 candidates, ncu at real clocks: 12.4 us against 6.2 + 8.4 us). With p.stats
// too (the half scan's re-rank, FlatHalfCopy.java) it also writes the k-th key of gv_rerank_stats.
constexpr int kRerankSelectMax = kRankOrderMax;  // RerankParams.SELECT_MAX_CANDIDATES

__device__ __forceinline__ void rerankSelectRow(const RerankParams& p, int query) {
  __shared__ unsigned long long sorted[kRerankSelectMax];  // radixKey(key) << 32 | id
  __shared__ int sLast;
  __threadfence();  // this block's exact keys before its count
  __syncthreads();
  if (threadIdx.x == 0) sLast = atomicAdd(p.rowsDone + query, 1) == (int)gridDim.y - 1;
  __syncthreads();
  if (!sLast) return;
  const long long row = (long long)query * p.candidates;
  const long long o = (long long)query * p.k;
  for (int e = threadIdx.x; e < p.candidates; e += blockDim.x) {
    const float key = __ldcg(p.exactKeys + row + e);  // past L1: other blocks' keys
    const bool full = key < GV_INF;  // false for NaN
    sorted[e] = (unsigned long long)radixKey(full ? key : GV_INF) << 32 | (unsigned)(full ? p.candIdx[row + e] : -1);
  }
  rankAndWrite(sorted, p.candidates, p.k, p.outScale, p.outK + o, p.outIdx + o);
  if (p.stats != nullptr) {  // the certificate's k-th exact key, as gv_rerank_stats takes it: one launch less
    __syncthreads();         // the row's writes, by the block's threads
    if (threadIdx.x == 0) p.stats[4LL * query] = p.outScale * p.outK[o + p.k - 1];
  }
}

__device__ __forceinline__ void rerankExact(const RerankParams& p) {
  const int query = blockIdx.x;
  rerankExactRow(p, query, p.queries + (long long)query * p.dims, p.vectors, p.chunkK, p.chunks);
  if (p.rowsDone != nullptr) rerankSelectRow(p, query);
}

// The candidates of several indexes in one launch (the segments of a pass that share one candidate selection,
// SharedKeySelection.java; RerankTable.java writes this layout): rows firstRow[e] .. firstRow[e + 1] - 1 are entry
// e's, re-ranked over its raw vectors against its queries (row - firstRow[e]); p.vectors and p.queries are unused.
// With p.chunkKeys, entry e's rows hold chunks[e] chunks of chunkK[e] keys each (FlatScanTable's half table).
constexpr int kRerankTableEntries = 64;
struct RerankTable {
  int entries;  // entries used, 1..kRerankTableEntries; firstRow ascending, firstRow[0] = 0
  int pad;
  int firstRow[kRerankTableEntries];
  int chunkK[kRerankTableEntries];
  int chunks[kRerankTableEntries];
  const float* vectors[kRerankTableEntries];
  const float* queries[kRerankTableEntries];
};
static_assert(sizeof(RerankTable) == 8 + kRerankTableEntries * 28, "RerankTable's layout is RerankTable.java's");

__device__ __forceinline__ void rerankExactTable(const RerankParams& p, const RerankTable& t) {
  const int row = blockIdx.x;
  int e = 0;
  while (e + 1 < t.entries && t.firstRow[e + 1] <= row) ++e;
  rerankExactRow(p, row, t.queries[e] + (long long)(row - t.firstRow[e]) * p.dims, t.vectors[e], t.chunkK[e],
                 t.chunks[e]);
  if (p.rowsDone != nullptr) rerankSelectRow(p, row);
}

// One thread per query: the k-th exact key, from the re-rank's selection (value outScale * key; an empty slot
// reads +inf).
__device__ __forceinline__ void rerankStats(const RerankParams& p) {
  const long long query = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (query >= p.numQueries) return;
  p.stats[4 * query] = p.outScale * p.outK[query * p.k + p.k - 1];
}

// dst row (dstRows ? dstRows[r] : r) = src row (srcRows ? srcRows[r] : r), width 32-bit words, one block per row:
// gathers the rejected queries' rows (queries, norms, accept masks) and scatters their FP32 results back.
__device__ __forceinline__ void copyRows(const unsigned* src, long long srcStride, const int* srcRows, unsigned* dst,
                                         long long dstStride, const int* dstRows, long long width) {
  const int r = blockIdx.x;
  const unsigned* s = src + (srcRows != nullptr ? srcRows[r] : r) * srcStride;
  unsigned* d = dst + (dstRows != nullptr ? dstRows[r] : r) * dstStride;
  for (long long i = threadIdx.x; i < width; i += blockDim.x) d[i] = s[i];
}

}  // namespace gv

using gv::RerankParams;
extern "C" {
// 128 threads (4 warps); grid (queries, parts per query); dynamic shared memory: dims floats rounded up to a float4.
__global__ void __launch_bounds__(128) gv_rerank_exact(RerankParams p) { gv::rerankExact(p); }
// As gv_rerank_exact over the rows of several indexes (grid.x = all rows).
__global__ void __launch_bounds__(128) gv_rerank_exact_table(RerankParams p,
                                                             const __grid_constant__ gv::RerankTable t) {
  gv::rerankExactTable(p, t);
}
// 256 threads, one per query.
__global__ void __launch_bounds__(256) gv_rerank_stats(RerankParams p) { gv::rerankStats(p); }
// 128 threads per row; grid.x = rows.
__global__ void __launch_bounds__(128) gv_copy_rows(const unsigned* src, long long srcStride, const int* srcRows,
                                                    unsigned* dst, long long dstStride, const int* dstRows,
                                                    long long width) {
  gv::copyRows(src, srcStride, srcRows, dst, dstStride, dstRows, width);
}
}
