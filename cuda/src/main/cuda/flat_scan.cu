// Exact search of a few queries at once (GpuFlatIndex's small batches: a pass of concurrent searches over a flat
// segment). The GEMM path pays for a distance matrix and a tiled SGEMM whose M (the queries) is a handful: on
// 1M x 128 a pass of 1 to 8 queries took 0.27-0.41 ms of GPU time against the 0.174 ms it takes to read the vectors
// once. Here the vectors are read once per block of kFlatScanQueries queries, coalesced, and never leave the SM as
// distances:
//
//   block (group, chunk): 8 warps; queries [group * 8, group * 8 + 8) in shared memory; the chunk's rows in tiles
//   of 256, one row a thread. A tile is staged through shared memory a slab of 32 floats (a row's 128-byte line)
//   at a time with cp.async, double-buffered so that the next slab is in flight while this one is scored; each
//   thread accumulates its row's inner products with the 8 queries. The keys go to shared memory and warp w feeds
//   query w's to its WarpSelect queue (select.cuh): one queue per query and block, no merge inside the block. The
//   chunks' k-lists are merged by a BlockSelect pass (GpuFlatIndex).
//
// Measured: one block of queries costs about the read (1M x 128: 0.24-0.25 ms for 1 to 8 queries), each further
// block ~0.13-0.15 ms more: it reads the vectors again (from L2) and its shared-memory
// reads (a row's float4 serves 8 queries, a query's one row) bound the loop. Two or four rows a thread (fewer
// shared-memory reads per FMA, narrower slabs to fit) were slower below 8 queries (narrow slabs waste DRAM bursts)
// and only ~10 % faster above, where the L2 re-reads bound them: so batches past 8 queries take the GEMM path.
//
// Keys are the GEMM path's (the same norms and clamp): max(0, ||x||^2 - 2 x.q + ||q||^2) for L2, -x.q otherwise.
#include "select.cuh"

namespace gv {

// FlatScanParams.java holds the same numbers (checked by ParamLayoutTest).
constexpr int kFlatScanQueries = 8;        // queries per block: one warp queue each
constexpr int kFlatScanThreads = 256;      // warp w keeps query w's queue
constexpr int kFlatScanRowsPerThread = 1;  // rows a thread scores (thread t: t + r * 256; more: see above)
constexpr int kFlatScanRows = 256;         // rows per tile
constexpr int kFlatScanSlab = 32;          // floats of each row staged at once (128 bytes: a whole line)
constexpr int kFlatScanPitch = 36;         // staged row pitch: float4 reads of 8 consecutive rows on 8 bank groups
static_assert(kFlatScanThreads == kFlatScanQueries * kWarpSize, "one warp queue a query");
static_assert(kFlatScanRows == kFlatScanRowsPerThread * kFlatScanThreads, "rows a tile");
constexpr int kFlatScanCopies = kFlatScanRows * kFlatScanSlab / kFlatScanThreads;  // floats a thread copies a slab

// Offset in a staged tile of row r's float4 c of the slab.
__device__ __forceinline__ int tileOffset(int r, int c) { return r * kFlatScanPitch + (c << 2); }

// Starts copying slab s of the tile of rows [row0, row0 + kFlatScanRows) into the staged tile `tile` (cp.async, in
// one commit group): row r's columns s * 32 .. s * 32 + 31 at tileOffset(r, 0 .. 7). 16-byte copies when rows are
// 16-byte aligned (eight threads a row), else 4-byte ones (32 threads a row); zeros past the rows' end and past
// dims, so they add nothing to the inner products.
template <bool VEC4>
__device__ __forceinline__ void stageSlab(float* tile, const FlatScanParams& p, long long row0, long long end, int s) {
  const int col0 = s * kFlatScanSlab;
  if constexpr (VEC4) {
#pragma unroll
    for (int j = 0; j < kFlatScanCopies / 4; ++j) {
      const int e = threadIdx.x + j * kFlatScanThreads;
      const int r = e / (kFlatScanSlab / 4), c = (e % (kFlatScanSlab / 4)) * 4;
      float4* dst = reinterpret_cast<float4*>(tile + tileOffset(r, c >> 2));
      if (row0 + r < end && col0 + c < p.dims) {
        copyAsync16(dst, p.vectors + (row0 + r) * p.dims + col0 + c);
      } else {
        *dst = make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
  } else {
#pragma unroll 8
    for (int j = 0; j < kFlatScanCopies; ++j) {
      const int e = threadIdx.x + j * kFlatScanThreads;
      const int r = e / kFlatScanSlab, c = e % kFlatScanSlab;
      float* dst = tile + tileOffset(r, c >> 2) + (c & 3);
      if (row0 + r < end && col0 + c < p.dims) {
        copyAsync4(dst, p.vectors + (row0 + r) * p.dims + col0 + c);
      } else {
        *dst = 0.f;
      }
    }
  }
  commitAsync();
}

template <int K, bool VEC4>
__device__ __forceinline__ void flatScan(const FlatScanParams& p) {
  constexpr int Q = kFlatScanQueries;
  constexpr int R = kFlatScanRowsPerThread;
  constexpr int kTileFloats = kFlatScanRows * kFlatScanPitch;
  extern __shared__ float4 smem4[];
  __shared__ float queryNorms[Q];
  const int slabs = (p.dims + kFlatScanSlab - 1) / kFlatScanSlab;
  const int dimsPad = slabs * kFlatScanSlab;  // each query padded with zeros to whole slabs
  float* tiles = reinterpret_cast<float*>(smem4);        // 2 x kTileFloats (double buffer)
  float* keys = tiles + 2 * kTileFloats;                 // 2 x Q x kFlatScanThreads (double buffer)
  float* sq = keys + 2 * Q * kFlatScanThreads;           // Q x dimsPad
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int query0 = blockIdx.x * Q;
  const int queries = min(Q, p.numQueries - query0);  // >= 1: the grid covers the batch
  const bool l2 = p.metric == 0;
  const long long begin = (long long)blockIdx.y * p.chunkLen;
  const long long end = min(p.n, begin + p.chunkLen);
  const int steps = (int)((end - begin + kFlatScanRows - 1) / kFlatScanRows) * slabs;  // (tile, slab) pairs
  if (steps > 0) stageSlab<VEC4>(tiles, p, begin, end, 0);  // the first slab's copy runs while the queries load

  for (int i = threadIdx.x; i < Q * dimsPad; i += kFlatScanThreads) {
    const int qi = i / dimsPad, d = i % dimsPad;
    sq[i] = qi < queries && d < p.dims ? p.queries[(long long)(query0 + qi) * p.dims + d] : 0.f;
  }
  __syncthreads();
  {  // ||q||^2, warp w for query w
    float s = 0.f;
    for (int d = lane; d < dimsPad; d += kWarpSize) s = fmaf(sq[warp * dimsPad + d], sq[warp * dimsPad + d], s);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFullMask, s, o);
    if (lane == 0) queryNorms[warp] = s;
  }  // read after the step loop's barriers

  const bool selects = warp < queries;  // warp-uniform
  WarpQueue<K, Bucket<K>::T> q;
  q.init(p.k);
  float acc[R][Q];
  for (int step = 0; step < steps; ++step) {  // uniform over the block
    const int s = step % slabs;
    const long long row0 = begin + (long long)(step / slabs) * kFlatScanRows;
    if (step + 1 < steps) {  // the next slab into the other buffer (scored two barriers ago) while this one is scored
      const int ns = (step + 1) % slabs;
      stageSlab<VEC4>(tiles + ((step + 1) & 1) * kTileFloats, p, ns == 0 ? row0 + kFlatScanRows : row0, end, ns);
      waitAsync<1>();
    } else {
      waitAsync<0>();
    }
    __syncthreads();  // every thread's copies of this slab have landed
    if (s == 0) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int qi = 0; qi < Q; ++qi) acc[r][qi] = 0.f;
      }
    }
    const float4* tile4 = reinterpret_cast<const float4*>(tiles + (step & 1) * kTileFloats);
    const float4* q4 = reinterpret_cast<const float4*>(sq + s * kFlatScanSlab);
#pragma unroll 2  // (full unrolling hoists all of the slab's query loads: 255 registers and spills)
    for (int c = 0; c < kFlatScanSlab / 4; ++c) {
      float4 x[R];
#pragma unroll
      for (int r = 0; r < R; ++r) x[r] = tile4[tileOffset(threadIdx.x + r * kFlatScanThreads, c) >> 2];
#pragma unroll
      for (int qi = 0; qi < Q; ++qi) {
        const float4 y = q4[qi * (dimsPad / 4) + c];  // the same address across the warp: a broadcast
#pragma unroll
        for (int r = 0; r < R; ++r) {
          acc[r][qi] = fmaf(x[r].x, y.x, fmaf(x[r].y, y.y, fmaf(x[r].z, y.z, fmaf(x[r].w, y.w, acc[r][qi]))));
        }
      }
    }
    if (s == slabs - 1) {  // the tile's keys, 256 rows at a time: to shared memory, then warp w selects query w's
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float* rk = keys + (r & 1) * Q * kFlatScanThreads;  // double buffer: written again two barriers later
        const long long row = row0 + r * kFlatScanThreads + threadIdx.x;
        const float xn = l2 && row < end ? p.norms[row] : 0.f;
#pragma unroll
        for (int qi = 0; qi < Q; ++qi) {
          float key = GV_INF;
          if (qi < queries && row < end &&
              (p.acceptBits == nullptr || accepted(p.acceptBits + (long long)(query0 + qi) * p.acceptRowWords, row))) {
            key = l2 ? fmaxf(0.f, fmaf(-2.f, acc[r][qi], xn) + queryNorms[qi]) : -acc[r][qi];
          }
          rk[qi * kFlatScanThreads + threadIdx.x] = key;
        }
        __syncthreads();
        if (selects) {
#pragma unroll 1
          for (int j = 0; j < kFlatScanThreads / kWarpSize; ++j) {
            const int t = j * kWarpSize + lane;
            // +inf (rejected, past the end) never enters
            q.add(rk[warp * kFlatScanThreads + t], (int)(row0 + r * kFlatScanThreads + t));
            q.check();
          }
        }
      }
    }
    __syncthreads();  // this tile buffer may be written again
  }
  if (selects) {
    q.flush();
    const long long o = (long long)(query0 + warp) * p.outRowStride + (long long)blockIdx.y * p.k;
    q.write(p.outK + o, p.outIdx + o, p.k, l2 ? 1.f : -1.f);
  }
}

// Several flat segments' scans in one launch (the small searches of a pass over a field's segments, FlatScanTable.java
// writes this layout, passed by value): entry z = blockIdx.z; a block past its entry's blocks of queries or chunks
// returns at once. Entries share dims (the dynamic shared memory holds their queries), metric and the k bucket.
constexpr int kFlatScanTableEntries = 32;  // 8 + 32 x 96 bytes: within a launch's 4 KB of parameters
using FlatScanTable = ParamTable<FlatScanParams, kFlatScanTableEntries>;
static_assert(sizeof(FlatScanTable) == 8 + kFlatScanTableEntries * sizeof(FlatScanParams),
              "FlatScanTable's layout is FlatScanTable.java's");

template <int K, bool VEC4>
__device__ __forceinline__ void flatScanTable(const FlatScanTable& t) {
  const FlatScanParams* entry = blockEntry(t);
  if (entry == nullptr || (int)blockIdx.x * kFlatScanQueries >= entry->numQueries || (int)blockIdx.y >= entry->chunks) {
    return;
  }
  // a copy in registers: the scan's loop reads the parameters again and again, and through a pointer into the
  // table (an index known at run time) each read was a load: 4-9 % slower at 32-128 queries (a table of one entry
  // against this copy)
  const FlatScanParams p = *entry;
  flatScan<K, VEC4>(p);
}

}  // namespace gv

using gv::FlatScanParams;
extern "C" {
// Dynamic shared memory: 4 * (2 * kFlatScanRows * kFlatScanPitch + 2 * kFlatScanQueries * kFlatScanThreads +
// kFlatScanQueries * dimsPad) bytes (FlatScanParams.java). _a: rows 16-byte aligned (dims % 4 == 0), 16-byte copies; _u: 4-byte copies.
#define GV_FLAT_SCAN(K)                                                                                              \
  __global__ void __launch_bounds__(gv::kFlatScanThreads, 2) gv_flat_scan_a_k##K(FlatScanParams p) {                \
    gv::flatScan<K, true>(p);                                                                                        \
  }                                                                                                                  \
  __global__ void __launch_bounds__(gv::kFlatScanThreads, 2) gv_flat_scan_u_k##K(FlatScanParams p) {                \
    gv::flatScan<K, false>(p);                                                                                       \
  }
#define GV_FLAT_SCAN_TABLE(K)                                                                                        \
  __global__ void __launch_bounds__(gv::kFlatScanThreads, 2)                                                         \
      gv_flat_scan_table_a_k##K(const __grid_constant__ gv::FlatScanTable t) {                                       \
    gv::flatScanTable<K, true>(t);                                                                                   \
  }                                                                                                                  \
  __global__ void __launch_bounds__(gv::kFlatScanThreads, 2)                                                         \
      gv_flat_scan_table_u_k##K(const __grid_constant__ gv::FlatScanTable t) {                                       \
    gv::flatScanTable<K, false>(t);                                                                                  \
  }
GV_FLAT_SCAN(32)
GV_FLAT_SCAN(64)
GV_FLAT_SCAN(128)
GV_FLAT_SCAN(256)
GV_FLAT_SCAN_TABLE(32)
GV_FLAT_SCAN_TABLE(64)
GV_FLAT_SCAN_TABLE(128)
GV_FLAT_SCAN_TABLE(256)
}
