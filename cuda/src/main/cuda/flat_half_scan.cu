// Candidates of a few queries from the index's FP16 copy (GpuFlatIndex's small batches; HalfBound.java says why the
// FP32 re-rank of k' candidates gives the exact answer). flat_scan.cu reads the FP32 vectors and spends its time in
// shared-memory reads (a row's float4 serves 8 queries from 8 broadcasts): 0.24-0.25 ms for 1 to 8 queries over
// 1M x 128, against the 0.17 ms it takes to read them once. Here the tensor cores take the products:
//
//   block (group, chunk): 8 warps; the group's 8 queries (n8 of mma.m16n8k16), each scaled by a power of two and
//   rounded to FP16 in shared memory; the chunk's rows in tiles of 256, 32 a warp (two m16 tiles). A lane loads its
//   16 bytes of four rows straight from global memory (no staging: each row's 64-byte line is read whole by its
//   four lanes) and feeds two mma steps per 32 dimensions, FP32 accumulation. The warp's 32 x 8 inner products go
//   to shared memory as keys, and warp w feeds query w's to its WarpSelect queue (select.cuh), as flat_scan.cu does.
//
// Dimension order inside an mma: lane (g, t) = (lane / 4, lane % 4) holds halves 8t .. 8t + 7 of a 32-dimension
// step of its rows and of query g; the first mma takes 8t .. 8t + 3 as its k = 2t, 2t + 1, 2t + 8, 2t + 9, the
// second 8t + 4 .. 8t + 7. Rows and queries use the same order, so each mma sums 16 distinct dimensions and the two
// cover all 32: the inner product is a sum, in any order.
//
// Keys: max(0, ||x||^2 - 2 x~.q~ + ||q||^2) for L2 (the FP32 norms), -x~.q~ otherwise, with x~.q~ = (FP16 products
// summed in FP32) / (vectorScale * queryScale).
#include <cuda_fp16.h>
#include "select.cuh"

namespace gv {

// HalfScanParams.java holds the same numbers (checked by ParamLayoutTest).
constexpr int kHalfScanQueries = 8;    // queries per block: the n of mma.m16n8k16, one warp queue each
constexpr int kHalfScanThreads = 256;  // warp w keeps query w's queue
constexpr int kHalfScanWarpRows = 32;  // two m16 tiles a warp
constexpr int kHalfScanRows = kHalfScanWarpRows * (kHalfScanThreads / kWarpSize);  // rows per tile: 256
constexpr int kHalfScanDimStep = 32;   // dimensions per step: four lanes x 8 halves (16 bytes) of a row
constexpr int kHalfScanTop = 14;       // values are scaled below 2^14: FP16's largest finite is 65,504
constexpr int kHalfScanPrefetchDims = 128;  // rows of at most this many dims: the _s_ kernels, the next tile prefetched
static_assert(kHalfScanThreads == kHalfScanQueries * kWarpSize, "one warp queue a query");

// D = A (16 x 16, row) * B (16 x 8, col) + D; FP16 inputs, FP32 accumulation.
__device__ __forceinline__ void mma16816(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                         unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// The power of two that brings a largest magnitude m below 2^kHalfScanTop and as close to it as it goes, at most
// 2^(kHalfScanTop + kHalfScanMinExp) (HalfBound.java takes both cases); 1 for 0, infinities and NaN.
constexpr int kHalfScanMinExp = 100;
__device__ __forceinline__ float halfScale(float m) {
  if (!(m > 0.f) || !isfinite(m)) return 1.f;
  int e;
  frexpf(m, &e);  // m < 2^e
  return ldexpf(1.f, kHalfScanTop - max(e, -kHalfScanMinExp));
}

// Query pitch in halves: rows g and g + 1 of a quarter warp's 16-byte reads on opposite halves of the banks.
__device__ __forceinline__ int halfQueryPitch(int dimsPad) { return (dimsPad & 63) == 32 ? dimsPad : dimsPad + 32; }

// The keys' other inputs for rows warpRow + 16m + g + 8h: their norms (L2) and, per query 2t + c, the mask word that
// holds the warp's 32 rows (warpRow is a multiple of 32), all loaded at once.
__device__ __forceinline__ void loadKeyInputs(const HalfScanParams& p, long long warpRow, long long end, int g, int t,
                                              int query0, int queries, bool l2, float (&xn)[2][2],
                                              unsigned long long (&maskWord)[2]) {
#pragma unroll
  for (int m = 0; m < 2; ++m) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long long r = warpRow + 16 * m + g + 8 * h;
      xn[m][h] = l2 && r < end ? __ldg(p.norms + r) : 0.f;
    }
  }
  maskWord[0] = maskWord[1] = ~0ull;
  if (p.acceptBits != nullptr && warpRow < end) {
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      if (2 * t + c < queries) {
        maskWord[c] = __ldg(p.acceptBits + (long long)(query0 + 2 * t + c) * p.acceptRowWords + (warpRow >> 6));
      }
    }
  }
}

// ShortRows (the host's choice for dimsPad <= kHalfScanPrefetchDims): the keys' inputs are loaded with the rows. Loaded
// after the products, one by one, each waited a memory latency of its own, tile after tile (loaded with the rows, the
// 1M x 128 scan kernel ran 6-8 % faster). Long rows load them after the products as before: the same early loads
// made the 768-d scan 12 % slower, for a reason not found.
template <int K, bool ShortRows>
__device__ __forceinline__ void halfScan(const HalfScanParams& p) {
  constexpr int Q = kHalfScanQueries;
  extern __shared__ uint4 hsmem[];
  __shared__ float queryNorms[Q];
  __shared__ float queryUnscale[Q];
  const int pitch = halfQueryPitch(p.dimsPad);
  __half* sq = reinterpret_cast<__half*>(hsmem);                                      // Q x pitch
  float* keys = reinterpret_cast<float*>(sq + Q * pitch);                             // 2 x Q x kHalfScanRows
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int g = lane >> 2, t = lane & 3;
  const int query0 = blockIdx.x * Q;
  const int queries = min(Q, p.numQueries - query0);  // >= 1: the grid covers the batch
  const bool l2 = p.metric == 0;
  const long long begin = (long long)blockIdx.y * p.chunkLen;
  const long long end = min(p.n, begin + p.chunkLen);

  {  // warp w: query w's ||q||^2 (FP32, as the FP32 paths sum it), largest magnitude, and FP16 copy
    const float* q = p.queries + (long long)(query0 + warp) * p.dims;
    float s = 0.f, m = 0.f;
    if (warp < queries) {
      for (int d = lane; d < p.dims; d += kWarpSize) {
        const float v = q[d];
        s = fmaf(v, v, s);
        m = fmaxf(m, fabsf(v));
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      s += __shfl_xor_sync(kFullMask, s, o);
      m = fmaxf(m, __shfl_xor_sync(kFullMask, m, o));
    }
    const float scale = halfScale(m);
    for (int d = lane; d < pitch; d += kWarpSize) {
      sq[warp * pitch + d] = __float2half_rn(warp < queries && d < p.dims ? q[d] * scale : 0.f);
    }
    if (lane == 0) {
      queryNorms[warp] = s;
      queryUnscale[warp] = warp < queries ? p.vectorUnscale / scale : 0.f;
    }
  }
  __syncthreads();

  const bool selects = warp < queries;  // warp-uniform
  const bool prefetch = p.dimsPad <= kHalfScanPrefetchDims;
  // Short rows: a tile's loads take about as long as its keys' selection, during which no load is in flight (1M x
  // 128: the scan read at 54 % of the bandwidth). The next tile is prefetched into L2 before the selection; a whole
  // wave's next tiles (256 rows x 256 bytes x 2 blocks x SMs: 17 MB at 132 multiprocessors) fit its L2, which wider
  // rows would not. Measured: 0.105 against 0.113 ms at one query.
  WarpQueue<K, Bucket<K>::T> queue;
  queue.init(p.k);
  const int steps = p.dimsPad / kHalfScanDimStep;
  const uint4* qrow = reinterpret_cast<const uint4*>(sq + g * pitch) + t;  // query g, halves 8t.. of each step
  int buffer = 0;
  for (long long row0 = begin; row0 < end; row0 += kHalfScanRows, buffer ^= 1) {  // uniform over the block
    const long long warpRow = row0 + warp * kHalfScanWarpRows;
    const uint4* rows[4];  // rows warpRow + g + 8i, halves 8t.. of each step (null past the chunk: zeros)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const long long r = warpRow + g + 8 * i;
      rows[i] = r < end ? reinterpret_cast<const uint4*>(p.vectors + r * p.dimsPad) + t : nullptr;
    }
    float xn[2][2];
    unsigned long long maskWord[2];
    if constexpr (ShortRows) loadKeyInputs(p, warpRow, end, g, t, query0, queries, l2, xn, maskWord);
    float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll 4
    for (int s = 0; s < steps; ++s) {
      uint4 x[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) x[i] = rows[i] != nullptr ? __ldg(rows[i] + s * 4) : make_uint4(0u, 0u, 0u, 0u);
      const uint4 y = qrow[s * 4];  // 4 uint4 (32 halves) per step
#pragma unroll
      for (int m = 0; m < 2; ++m) {  // m16 tile m: rows i = 2m (g) and 2m + 1 (g + 8)
        mma16816(acc[m], x[2 * m].x, x[2 * m + 1].x, x[2 * m].y, x[2 * m + 1].y, y.x, y.y);
        mma16816(acc[m], x[2 * m].z, x[2 * m + 1].z, x[2 * m].w, x[2 * m + 1].w, y.z, y.w);
      }
    }
    if (prefetch) {  // lane l: row warpRow + 256 + l of the next tile into L2 while this tile's keys are selected
      const long long r = warpRow + kHalfScanRows + lane;
      if (r < end) {
        const char* line = reinterpret_cast<const char*>(p.vectors + r * p.dimsPad);
        for (int b = 0; b < 2 * p.dimsPad; b += 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(line + b));
      }
    }
    // acc[m][h * 2 + c]: row warpRow + 16m + g + 8h, query 2t + c
    float* tk = keys + buffer * Q * kHalfScanRows;
#pragma unroll
    for (int m = 0; m < 2; ++m) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int local = warp * kHalfScanWarpRows + 16 * m + g + 8 * h;  // row in the tile
        const long long row = row0 + local;
        const int bit = (int)(warpRow & 63) + 16 * m + g + 8 * h;  // ShortRows: the row in its mask word
        const float rowNorm = ShortRows ? xn[m][h] : l2 && row < end ? p.norms[row] : 0.f;
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int qi = 2 * t + c;
          float key = GV_INF;
          if (qi < queries && row < end &&
              (ShortRows ? ((maskWord[c] >> bit) & 1ull) != 0
                         : p.acceptBits == nullptr ||
                               accepted(p.acceptBits + (long long)(query0 + qi) * p.acceptRowWords, row))) {
            const float dot = acc[m][h * 2 + c] * queryUnscale[qi];
            key = l2 ? fmaxf(0.f, fmaf(-2.f, dot, rowNorm) + queryNorms[qi]) : -dot;
          }
          tk[qi * kHalfScanRows + local] = key;
        }
      }
    }
    __syncthreads();  // the tile's keys are in; the other buffer's were consumed before this barrier
    if (selects) {
#pragma unroll 1
      for (int j = 0; j < kHalfScanRows / kWarpSize; ++j) {
        const int local = j * kWarpSize + lane;
        queue.add(tk[warp * kHalfScanRows + local], (int)(row0 + local));  // +inf (rejected, past the end) never enters
        queue.check();
      }
    }
  }
  if (selects) {
    queue.flush();
    const long long o = (long long)(query0 + warp) * p.outRowStride + (long long)blockIdx.y * p.k;
    queue.write(p.outK + o, p.outIdx + o, p.k, 1.f);  // keys as they are: the re-rank reads them ascending
  }
}

// Several flat segments' half scans in one launch (the small searches of a pass over a field's segments,
// FlatScanTable.java writes this layout, passed by value): entry z = blockIdx.z; a block past its entry's blocks of
// queries or chunks returns at once. Entries share dims (the dynamic shared memory holds their queries), metric and
// k' (the members' largest k's).
constexpr int kHalfScanTableEntries = 32;  // 8 + 32 x 104 bytes: within a launch's 4 KB of parameters
using HalfScanTable = ParamTable<HalfScanParams, kHalfScanTableEntries>;
static_assert(sizeof(HalfScanTable) == 8 + kHalfScanTableEntries * sizeof(HalfScanParams),
              "HalfScanTable's layout is FlatScanTable.java's");

template <int K, bool ShortRows>
__device__ __forceinline__ void halfScanTable(const HalfScanTable& t) {
  const HalfScanParams* entry = blockEntry(t);
  if (entry == nullptr || (int)blockIdx.x * kHalfScanQueries >= entry->numQueries || (int)blockIdx.y >= entry->chunks) {
    return;
  }
  const HalfScanParams p = *entry;  // in registers, as flat_scan.cu's table: through a pointer each read is a load
  halfScan<K, ShortRows>(p);
}

// The FP16 copy of rows x (n x dims FP32): out row r = round(x_r * scale) to FP16, dimsPad halves, zeros past dims.
__device__ __forceinline__ void toHalf(const float* x, long long n, int dims, int dimsPad, float scale,
                                       unsigned short* out) {
  const long long total = n * dimsPad;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const long long r = i / dimsPad;
    const int d = (int)(i - r * dimsPad);
    const __half h = __float2half_rn(d < dims ? x[r * dims + d] * scale : 0.f);
    out[i] = __half_as_ushort(h);
  }
}

// *out = max(*out, the largest |x_i| of count floats) (out zeroed first; NaN skipped). Non-negative floats order
// as their bits do, so an integer atomicMax takes the maximum.
__device__ __forceinline__ void maxAbs(const float* x, long long count, unsigned* out) {
  float m = 0.f;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    m = fmaxf(m, fabsf(x[i]));  // fmaxf ignores NaN
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(kFullMask, m, o));
  if ((threadIdx.x & (kWarpSize - 1)) == 0) atomicMax(out, __float_as_uint(m));
}

}  // namespace gv

using gv::HalfScanParams;
extern "C" {
// Dynamic shared memory: 2 * kHalfScanQueries * pitch + 4 * 2 * kHalfScanQueries * kHalfScanRows bytes
// (HalfScanParams.sharedBytes). A chunk keeps k' = max(2k, k + 32) candidates, or fewer but at least 32
// (HalfScanParams.chunkCandidates): buckets 32 to 256.
// _s_: rows of at most kHalfScanPrefetchDims dims (HalfScanParams.shortRows).
#define GV_HALF_SCAN(K)                                                                                              \
  __global__ void __launch_bounds__(gv::kHalfScanThreads, 2) gv_half_scan_k##K(HalfScanParams p) {                  \
    gv::halfScan<K, false>(p);                                                                                       \
  }                                                                                                                  \
  __global__ void __launch_bounds__(gv::kHalfScanThreads, 2) gv_half_scan_s_k##K(HalfScanParams p) {                \
    gv::halfScan<K, true>(p);                                                                                        \
  }
#define GV_HALF_SCAN_TABLE(K)                                                                                        \
  __global__ void __launch_bounds__(gv::kHalfScanThreads, 2)                                                         \
      gv_half_scan_table_k##K(const __grid_constant__ gv::HalfScanTable t) {                                         \
    gv::halfScanTable<K, false>(t);                                                                                  \
  }                                                                                                                  \
  __global__ void __launch_bounds__(gv::kHalfScanThreads, 2)                                                         \
      gv_half_scan_table_s_k##K(const __grid_constant__ gv::HalfScanTable t) {                                       \
    gv::halfScanTable<K, true>(t);                                                                                   \
  }
GV_HALF_SCAN(32)
GV_HALF_SCAN(64)
GV_HALF_SCAN(128)
GV_HALF_SCAN(256)
GV_HALF_SCAN_TABLE(32)
GV_HALF_SCAN_TABLE(64)
GV_HALF_SCAN_TABLE(128)
GV_HALF_SCAN_TABLE(256)
// grid-stride, any grid
__global__ void gv_to_half(const float* x, long long n, int dims, int dimsPad, float scale, unsigned short* out) {
  gv::toHalf(x, n, dims, dimsPad, scale, out);
}
// grid-stride, any grid of whole warps
__global__ void gv_max_abs(const float* x, long long count, unsigned* out) { gv::maxAbs(x, count, out); }
}
