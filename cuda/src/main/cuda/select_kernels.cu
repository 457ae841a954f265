// k-selection kernels over the rows of a row-major float matrix: WarpSelect (one warp per row
// chunk), BlockSelect (one block per row chunk, warps merged in shared memory) and a Tang-style
// buffered selection. Every kernel takes one SelectParams; the Java launchers (KSelect.java) pick
// the k bucket, the grid and the hierarchical partition (chunksPerRow).
#include "scan.cuh"

namespace gv {

__device__ __forceinline__ void rowChunk(const SelectParams& p, int vrow, int& row, int& chunk, int& begin,
                                         int& end) {
  row = vrow / p.chunksPerRow;
  chunk = vrow - row * p.chunksPerRow;
  begin = chunk * p.chunkLen;
  end = min(p.len, begin + p.chunkLen);
}

// WarpSelect: each warp handles one (row, chunk); blocks of 4 warps.
template <int K>
__device__ __forceinline__ void warpSelect(const SelectParams& p) {
  const int vrow = blockIdx.x * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
  if (vrow >= p.rows * p.chunksPerRow) return;  // whole warp leaves together
  int row, chunk, begin, end;
  rowChunk(p, vrow, row, chunk, begin, end);
  __shared__ ScanShared<K, kWarpSelectStages> sh[4];  // scanRow's load ring and candidate buffer, one per warp
  const int warp = threadIdx.x / kWarpSize;
  WarpQueue<K, Bucket<K>::T> q;
  q.init(p.k);
  scanRow(q, p, row, begin, end, 0, 1, sh[warp]);
  const long long o = (long long)row * p.outRowStride + (long long)chunk * p.k;
  q.write(p.outK + o, p.outIdx + o, p.k, p.outScale);
}

// BlockSelect: each block handles one (row, chunk); each warp keeps its own queue over a strided
// share of the columns, then warps 1.. are merged into warp 0 through shared memory. The warps share
// one rejection threshold (the lowest k-th value any of them has reached) in shared memory.
template <int K>
__device__ __forceinline__ void blockSelect(const SelectParams& p) {
  constexpr int NW = Bucket<K>::Warps;
  // the warps' scan buffers, and once every warp has scanned, the queues of warps 1.. (aliased: at
  // K = 1024 both together would pass the 48 KB of static shared memory)
  union Shared {
    ScanShared<K, kBlockSelectStages> scan[NW];
    struct { float k[(NW - 1) * K]; int v[(NW - 1) * K]; } queues;
  };
  __shared__ Shared sh;
  __shared__ int sThr;  // the lowest k-th value any warp has reached (orderedInt)
  int row, chunk, begin, end;
  rowChunk(p, blockIdx.x, row, chunk, begin, end);
  const int warp = threadIdx.x / kWarpSize;
  if (threadIdx.x == 0) sThr = orderedInt(GV_INF);
  __syncthreads();
  WarpQueue<K, Bucket<K>::T> q;
  q.init(p.k, &sThr);
  scanRow(q, p, row, begin, end, warp, NW, sh.scan[warp]);
  __syncthreads();  // every warp is done with its scan buffers before they are reused
  if (warp > 0) q.store(sh.queues.k + (warp - 1) * K, sh.queues.v + (warp - 1) * K);
  __syncthreads();
  if (warp == 0) {
    for (int w = 1; w < NW; ++w) q.mergeShared(sh.queues.k + (w - 1) * K, sh.queues.v + (w - 1) * K);
    const long long o = (long long)row * p.outRowStride + (long long)chunk * p.k;
    q.write(p.outK + o, p.outIdx + o, p.k, p.outScale);
  }
}

// ---- Tang et al., "Efficient Selection Algorithm for Fast k-NN Search on GPUs" (simplified) ----
// Merge queue: a sorted queue of K pairs in shared memory; its last value is the threshold.
// Buffered search: every thread tests 4 values per sweep against the threshold and appends the few
// that pass to a shared buffer (shared atomic counter); when the buffer could overflow, the block
// sorts it (bitonic, shared memory) and merges it into the queue (cross compare + half-cleaners),
// which lowers the threshold. Hierarchical partition: long rows are cut into chunks (grid), each
// chunk selects its K, and a second pass selects over the chunks' lists (KSelect.java).
// Differences from the paper: one queue per block instead of per warp, no warp-level prefiltering.
constexpr int kTangThreads = 256;
constexpr int kTangPerThread = 4;

template <int N>
__device__ __forceinline__ void blockBitonic(float* k, int* v, bool fullSort) {
  for (int s = fullSort ? 2 : N; s <= N; s <<= 1) {
    for (int j = s >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < N; i += blockDim.x) {
        const int l = i ^ j;
        if (l > i) {
          const bool asc = s == N || (i & s) == 0;
          if (asc ? (k[l] < k[i]) : (k[i] < k[l])) { swapT(k[i], k[l]); swapT(v[i], v[l]); }
        }
      }
      __syncthreads();
    }
  }
}

template <int K>
__device__ __forceinline__ void tangSelect(const SelectParams& p) {
  constexpr int B = K > kTangThreads * kTangPerThread ? K : kTangThreads * kTangPerThread;
  __shared__ float qk[K];
  __shared__ int qv[K];
  __shared__ float bk[B];
  __shared__ int bv[B];
  __shared__ int count;
  int row, chunk, begin, end;
  rowChunk(p, blockIdx.x, row, chunk, begin, end);
  const float* inRow = p.in + (long long)row * p.inRowStride;
  const int* idxRow = p.inIdx != nullptr ? p.inIdx + (long long)row * p.inRowStride : nullptr;
  for (int i = threadIdx.x; i < K; i += blockDim.x) { qk[i] = GV_INF; qv[i] = -1; }
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  float kth = GV_INF;

  auto flush = [&]() {
    const int n = count;
    for (int i = n + threadIdx.x; i < B; i += blockDim.x) { bk[i] = GV_INF; bv[i] = -1; }
    __syncthreads();
    blockBitonic<B>(bk, bv, true);
    for (int i = threadIdx.x; i < K; i += blockDim.x) {
      const float b = bk[K - 1 - i];  // B >= K
      if (b < qk[i]) { qk[i] = b; qv[i] = bv[K - 1 - i]; }
    }
    __syncthreads();
    blockBitonic<K>(qk, qv, false);
    kth = qk[K - 1];
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
  };

  constexpr int sweep = kTangThreads * kTangPerThread;
  for (int base = begin; base < end; base += sweep) {
    if (count + sweep > B) flush();  // uniform: count was last written before a barrier
    float v[kTangPerThread]; int id[kTangPerThread];
#pragma unroll
    for (int u = 0; u < kTangPerThread; ++u) {
      const int col = base + u * kTangThreads + threadIdx.x;
      id[u] = -1;
      v[u] = col < end ? epilogue(p, inRow[col], idxRow, row, col, id[u]) : GV_INF;
    }
#pragma unroll
    for (int u = 0; u < kTangPerThread; ++u) {
      if (v[u] < kth) {
        const int pos = atomicAdd(&count, 1);
        bk[pos] = v[u]; bv[pos] = id[u];
      }
    }
    __syncthreads();
  }
  if (count > 0) flush();
  const long long o = (long long)row * p.outRowStride + (long long)chunk * p.k;
  for (int e = threadIdx.x; e < p.k; e += blockDim.x) {
    const bool empty = qv[e] < 0;
    p.outK[o + e] = p.outScale * (empty ? GV_INF : qk[e]);
    p.outIdx[o + e] = qv[e];
  }
}

}  // namespace gv

using gv::SelectParams;
// Stable names for the JCuda driver API: gv_<algorithm>_k<bucket>. WarpSelect blocks have 128
// threads (4 rows per block), BlockSelect 128 (64 for k2048), Tang 256.
extern "C" {
__global__ void __launch_bounds__(128) gv_warp_select_k32(SelectParams p) { gv::warpSelect<32>(p); }
__global__ void __launch_bounds__(128) gv_warp_select_k64(SelectParams p) { gv::warpSelect<64>(p); }
__global__ void __launch_bounds__(128) gv_warp_select_k128(SelectParams p) { gv::warpSelect<128>(p); }
__global__ void __launch_bounds__(128) gv_warp_select_k256(SelectParams p) { gv::warpSelect<256>(p); }
__global__ void __launch_bounds__(128) gv_warp_select_k512(SelectParams p) { gv::warpSelect<512>(p); }
__global__ void __launch_bounds__(128) gv_warp_select_k1024(SelectParams p) { gv::warpSelect<1024>(p); }
__global__ void __launch_bounds__(128) gv_warp_select_k2048(SelectParams p) { gv::warpSelect<2048>(p); }

__global__ void __launch_bounds__(128) gv_block_select_k32(SelectParams p) { gv::blockSelect<32>(p); }
__global__ void __launch_bounds__(128) gv_block_select_k64(SelectParams p) { gv::blockSelect<64>(p); }
__global__ void __launch_bounds__(128) gv_block_select_k128(SelectParams p) { gv::blockSelect<128>(p); }
__global__ void __launch_bounds__(128) gv_block_select_k256(SelectParams p) { gv::blockSelect<256>(p); }
__global__ void __launch_bounds__(128) gv_block_select_k512(SelectParams p) { gv::blockSelect<512>(p); }
__global__ void __launch_bounds__(128) gv_block_select_k1024(SelectParams p) { gv::blockSelect<1024>(p); }
__global__ void __launch_bounds__(64) gv_block_select_k2048(SelectParams p) { gv::blockSelect<2048>(p); }

__global__ void __launch_bounds__(256) gv_tang_select_k32(SelectParams p) { gv::tangSelect<32>(p); }
__global__ void __launch_bounds__(256) gv_tang_select_k64(SelectParams p) { gv::tangSelect<64>(p); }
__global__ void __launch_bounds__(256) gv_tang_select_k128(SelectParams p) { gv::tangSelect<128>(p); }
__global__ void __launch_bounds__(256) gv_tang_select_k256(SelectParams p) { gv::tangSelect<256>(p); }
__global__ void __launch_bounds__(256) gv_tang_select_k512(SelectParams p) { gv::tangSelect<512>(p); }
__global__ void __launch_bounds__(256) gv_tang_select_k1024(SelectParams p) { gv::tangSelect<1024>(p); }
__global__ void __launch_bounds__(256) gv_tang_select_k2048(SelectParams p) { gv::tangSelect<2048>(p); }
}
