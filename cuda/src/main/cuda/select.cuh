// WarpSelect / BlockSelect after Faiss GPU (Johnson, Douze, Jegou, "Billion-scale similarity search
// with GPUs"): a warp queue of W*32 (key, id) pairs kept sorted in registers across the 32 lanes
// (element e lives in register e / 32 of lane e % 32), plus a small unsorted per-thread queue of T
// pairs. A value enters a thread queue only when it beats the warp queue's k-th value; when any
// thread queue is full, the warp sorts all thread queues together (bitonic network over 32*T
// elements, T padded to a power of two with sentinels) and merges them into the warp queue.
// The selection kernels' scan (scanRow, scan.cuh) buffers candidates warp-wide in shared memory
// instead of the per-lane thread queues (mergeBuffer: the same 32*P sort + merge, fewer merges); the
// fused search kernel still uses add / check / flush.
//
// Odd-size merge (Faiss's BitonicMergeStep for lists of unequal length): merging a sorted list B of
// 32*P elements (any P) into the sorted warp queue A of 32*W elements keeps
// A'[e] = min(A[e], B[32W-1-e]) (B padded with +inf) -- exactly the 32*W smallest of A u B and a
// bitonic sequence -- then one bitonic half-cleaner cascade of log2(32W) steps sorts A'.
//
// Warp invariant: every function here must be called by all 32 lanes of the warp (shuffles and
// votes use the full mask); arrays are indexed with compile-time constants only, so they stay in
// registers.
#pragma once
#include "common.cuh"

namespace gv {

template <typename T>
__device__ __forceinline__ void swapT(T& a, T& b) { T t = a; a = b; b = t; }

__device__ __forceinline__ constexpr int pow2Ceil(int x) { return x <= 1 ? 1 : 2 * pow2Ceil((x + 1) / 2); }

// One compare-exchange stage of a bitonic network over N registers x 32 lanes.
// Partner of element e is e ^ J; for sort stage S the element's run is ascending iff (e & S) == 0
// (S == 0 means "whole sequence ascending": the merge/clean phase).
template <int N, int S, int J>
__device__ __forceinline__ void bitonicStep(float (&k)[N], int (&v)[N], int lane) {
  if constexpr (J >= kWarpSize) {
    constexpr int jr = J / kWarpSize;
#pragma unroll
    for (int r = 0; r < N; ++r) {
      if ((r & jr) == 0) {
        // S >= 2*J >= 64 here, so the direction depends on the register only
        const bool asc = S == 0 || (((r * kWarpSize) & S) == 0);
        const bool sw = asc ? (k[r | jr] < k[r]) : (k[r] < k[r | jr]);
        if (sw) { swapT(k[r], k[r | jr]); swapT(v[r], v[r | jr]); }
      }
    }
  } else {
#pragma unroll
    for (int r = 0; r < N; ++r) {
      const float ok = __shfl_xor_sync(kFullMask, k[r], J);
      const int ov = __shfl_xor_sync(kFullMask, v[r], J);
      const int e = r * kWarpSize + lane;
      const bool asc = S == 0 || ((e & S) == 0);
      const bool lower = (lane & J) == 0;
      // the lower partner keeps the min on an ascending run; strict comparisons keep ties in place
      const bool take = (lower == asc) ? (ok < k[r]) : (k[r] < ok);
      if (take) { k[r] = ok; v[r] = ov; }
    }
  }
}

// Sorts (S == 0) the bitonic sequence with half-cleaners J = L/2 .. 1, or runs sort stage S.
template <int N, int S, int J>
__device__ __forceinline__ void bitonicCascade(float (&k)[N], int (&v)[N], int lane) {
  if constexpr (J >= 1) {
    bitonicStep<N, S, J>(k, v, lane);
    bitonicCascade<N, S, J / 2>(k, v, lane);
  }
}

template <int N, int S>
__device__ __forceinline__ void bitonicSortStages(float (&k)[N], int (&v)[N], int lane) {
  if constexpr (S <= N * kWarpSize) {
    if constexpr (S == N * kWarpSize) {
      bitonicCascade<N, 0, S / 2>(k, v, lane);  // last stage: whole sequence ascending
    } else {
      bitonicCascade<N, S, S / 2>(k, v, lane);
      bitonicSortStages<N, S * 2>(k, v, lane);
    }
  }
}

// Full ascending bitonic sort of N*32 elements (N a power of two).
template <int N>
__device__ __forceinline__ void warpSort(float (&k)[N], int (&v)[N], int lane) {
  static_assert((N & (N - 1)) == 0, "warpSort needs a power-of-two register count");
  bitonicSortStages<N, 2>(k, v, lane);
}

// Merges the sorted list (bk, bv) of 32*P elements into the sorted warp queue (wk, wv) of 32*W,
// keeping the 32*W smallest (see the file comment).
template <int W, int P>
__device__ __forceinline__ void warpMergeInto(float (&wk)[W], int (&wv)[W], const float (&bk)[P],
                                              const int (&bv)[P], int lane) {
#pragma unroll
  for (int r = 0; r < W; ++r) {
    const int br = W - 1 - r;  // element 32W-1-e of B is register W-1-r, lane 31-lane
    if (br < P) {
      const float ok = __shfl_xor_sync(kFullMask, bk[br < P ? br : 0], kWarpSize - 1);
      const int ov = __shfl_xor_sync(kFullMask, bv[br < P ? br : 0], kWarpSize - 1);
      if (ok < wk[r]) { wk[r] = ok; wv[r] = ov; }
    }
  }
  bitonicCascade<W, 0, W * kWarpSize / 2>(wk, wv, lane);
}

// Float <-> int with the same order (for atomicMin on a float threshold); never given NaN.
__device__ __forceinline__ int orderedInt(float f) {
  const int i = __float_as_int(f);
  return i >= 0 ? i : i ^ 0x7fffffff;
}
__device__ __forceinline__ float orderedFloat(int i) { return __int_as_float(i >= 0 ? i : i ^ 0x7fffffff); }

// k-selection state of one warp. K: warp queue length (power of two >= 32); T: thread queue length.
template <int K, int T>
struct WarpQueue {
  static_assert(K >= kWarpSize && (K & (K - 1)) == 0, "warp queue length must be a power of two >= 32");
  static constexpr int W = K / kWarpSize;   // warp-queue registers per lane
  static constexpr int P = pow2Ceil(T);     // thread queue padded for the sorting network

  float wk[W]; int wv[W];                   // warp queue, sorted ascending across the warp
  float tk[T]; int tv[T];                   // thread queue, unsorted (newest first)
  int num;                                  // values in this lane's thread queue
  float kth;                                // rejection threshold: the queue's k-th smallest (or lower,
                                            // from a shared block threshold); +inf until k are in
  int kpos;                                 // k - 1: the queue position that defines kth
  int* blockThr;                            // optional shared-memory threshold of the block (ordered int)
  int lane;

  // All lanes. k: the values wanted (1..K); values not below the k-th smallest seen so far can
  // never be output, so the threshold is the k-th queue entry, not the K-th.
  __device__ __forceinline__ void init(int k = K, int* sharedThr = nullptr) {
    kpos = k - 1;
    blockThr = sharedThr;
    lane = threadIdx.x & (kWarpSize - 1);
#pragma unroll
    for (int r = 0; r < W; ++r) { wk[r] = GV_INF; wv[r] = -1; }
#pragma unroll
    for (int i = 0; i < T; ++i) { tk[i] = GV_INF; tv[i] = -1; }
    num = 0;
    kth = GV_INF;
  }

  // Any lane, no warp synchronisation. NaN and +inf never pass (strict <).
  __device__ __forceinline__ void add(float key, int id) {
    if (key < kth) {
#pragma unroll
      for (int i = T - 1; i > 0; --i) { tk[i] = tk[i - 1]; tv[i] = tv[i - 1]; }
      tk[0] = key; tv[0] = id;
      ++num;
    }
  }

  __device__ __forceinline__ void mergeThreadQueues() {
    float sk[P]; int sv[P];
#pragma unroll
    for (int i = 0; i < P; ++i) { sk[i] = i < T ? tk[i < T ? i : 0] : GV_INF; sv[i] = i < T ? tv[i < T ? i : 0] : -1; }
    warpSort<P>(sk, sv, lane);
    warpMergeInto<W, P>(wk, wv, sk, sv, lane);
#pragma unroll
    for (int i = 0; i < T; ++i) { tk[i] = GV_INF; tv[i] = -1; }
    num = 0;
    updateKth();
  }

  // All lanes: sorts the n (warp-uniform, <= 32*P) pairs at (bk, bv) in a warp's shared-memory
  // candidate buffer, merges them into the warp queue and updates kth. Used by scanRow instead of
  // the per-lane thread queues: the buffer is filled warp-wide (prefix sums), so a merge takes a
  // full 32*P batch instead of firing when the first lane's T slots are full.
  __device__ __forceinline__ void mergeBuffer(const float* bk, const int* bv, int n) {
    float sk[P]; int sv[P];
#pragma unroll
    for (int i = 0; i < P; ++i) {
      const int e = i * kWarpSize + lane;
      sk[i] = e < n ? bk[e] : GV_INF;
      sv[i] = e < n ? bv[e] : -1;
    }
    __syncwarp();  // the buffer may be refilled
    warpSort<P>(sk, sv, lane);
    warpMergeInto<W, P>(wk, wv, sk, sv, lane);
    updateKth();
  }

  __device__ __forceinline__ void updateKth() {
    // register kpos / 32 of lane kpos % 32; a bit-test select chain (an index compare would let
    // nvcc turn it into a dynamically indexed local-memory array)
    const unsigned long long regBit = 1ull << (kpos / kWarpSize);  // W <= 64
    float x = wk[0];
#pragma unroll
    for (int r = 1; r < W; ++r) x = (regBit & (1ull << r)) ? wk[r] : x;
    kth = __shfl_sync(kFullMask, x, kpos % kWarpSize);
    if (blockThr != nullptr) {
      // any warp's k-th value bounds the block's k-th value: publish ours, take the block's best
      if (lane == 0) atomicMin(blockThr, orderedInt(kth));
      kth = fminf(kth, orderedFloat(*(volatile int*)blockThr));
    }
  }

  // All lanes: lower kth to the block's shared threshold (another warp may have published).
  __device__ __forceinline__ void refreshThreshold() {
    if (blockThr != nullptr) kth = fminf(kth, orderedFloat(*(volatile int*)blockThr));
  }

  // All lanes: merge when any thread queue is full. Call after each add.
  __device__ __forceinline__ void check() {
    if (__any_sync(kFullMask, num == T)) mergeThreadQueues();
  }

  // All lanes: final merge of what remains in the thread queues.
  __device__ __forceinline__ void flush() {
    if (__any_sync(kFullMask, num > 0)) mergeThreadQueues();
  }

  // All lanes: merge another sorted warp-queue image (K pairs in shared memory) into this one;
  // element 32W-1-e of the other list is read straight from shared memory (no register copy).
  __device__ __forceinline__ void mergeShared(const float* sk, const int* sv) {
#pragma unroll
    for (int r = 0; r < W; ++r) {
      const int e = K - 1 - (r * kWarpSize + lane);
      const float ok = sk[e];
      if (ok < wk[r]) { wk[r] = ok; wv[r] = sv[e]; }
    }
    bitonicCascade<W, 0, K / 2>(wk, wv, lane);
  }

  __device__ __forceinline__ void store(float* sk, int* sv) const {
#pragma unroll
    for (int r = 0; r < W; ++r) { sk[r * kWarpSize + lane] = wk[r]; sv[r * kWarpSize + lane] = wv[r]; }
  }

  // Writes the first k pairs (best first), value multiplied by outScale.
  __device__ __forceinline__ void write(float* outK, int* outIdx, int k, float outScale) const {
#pragma unroll
    for (int r = 0; r < W; ++r) {
      const int e = r * kWarpSize + lane;
      if (e < k) {
        const bool empty = wv[r] < 0;
        outK[e] = empty ? outScale * GV_INF : outScale * wk[r];
        outIdx[e] = wv[r];
      }
    }
  }
};

// Compile-time k buckets: warp-queue length K and thread-queue length T (Faiss's table; T=3 is the
// odd size). k = 1..32 uses the 32 bucket. Threads per block for BlockSelect / fused search: 128
// (4 warps), 64 for K = 2048 so the block merge fits in 32 KB of shared memory.
//   K:    32  64  128  256  512  1024  2048
//   T:     2   3    3    4    8     8     8
template <int K> struct Bucket;
template <> struct Bucket<32>   { static constexpr int T = 2; static constexpr int Warps = 4; };
template <> struct Bucket<64>   { static constexpr int T = 3; static constexpr int Warps = 4; };
template <> struct Bucket<128>  { static constexpr int T = 3; static constexpr int Warps = 4; };
template <> struct Bucket<256>  { static constexpr int T = 4; static constexpr int Warps = 4; };
template <> struct Bucket<512>  { static constexpr int T = 8; static constexpr int Warps = 4; };
template <> struct Bucket<1024> { static constexpr int T = 8; static constexpr int Warps = 4; };
template <> struct Bucket<2048> { static constexpr int T = 8; static constexpr int Warps = 2; };

}  // namespace gv
