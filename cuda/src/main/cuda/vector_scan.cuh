// One block's exact scan of a range of vectors for one query: the distance computation shared by the
// fused exact-search kernel (exact_kernels.cu: a chunk of all vectors) and the IVF-Flat list scan
// (ivf_kernels.cu: one inverted list, stored in list order). The query sits in shared memory, each
// lane computes whole distances of its own vectors, each warp keeps a WarpSelect queue (thread queues:
// add / check / flush), and the warps are merged in shared memory.
// Barriers: loadQuery and mergeWarpsAndWrite call __syncthreads, so every thread of the block must
// reach them (no early return before).
#pragma once
#include "select.cuh"

namespace gv {

// Copies the query's dims floats into shared memory (sq4: at least dims rounded up to 4 floats) and
// waits until the whole block can read them.
__device__ __forceinline__ void loadQuery(float4* sq4, const float* qrow, int dims) {
  float* sq = reinterpret_cast<float*>(sq4);
  for (int d = threadIdx.x; d < dims; d += blockDim.x) sq[d] = qrow[d];
  __syncthreads();
}

// Feeds the vectors at positions [begin, end) of the row-major matrix `vectors` to the calling warp's
// queue, then flushes its thread queues. Warp w of the block's NW takes positions begin + w * 32 + lane,
// striding by NW * 32 (coalesced over the warp only per vector start: each lane reads its own row).
// The key is the squared L2 distance, or the negated inner product when ip (the queue keeps the
// smallest). The id of position pos is ords[pos] when ords is given (IVF lists: positions in list
// order, ids are vector ordinals), else pos; the accept mask (optional) is tested by id. Rejected and
// past-the-end positions add the sentinel (+inf, -1), which never enters the queue.
template <int K, int T>
__device__ __forceinline__ void scanVectors(WarpQueue<K, T>& q, const float* vectors, int dims, bool ip,
                                            const float4* sq4, long long begin, long long end, const int* ords,
                                            const unsigned long long* acceptBits) {
  constexpr int NW = Bucket<K>::Warps;
  const float* sq = reinterpret_cast<const float*>(sq4);
  const int warp = threadIdx.x / kWarpSize;
  const bool vec4 = (dims & 3) == 0;
  for (long long base = begin + warp * kWarpSize; base < end; base += NW * kWarpSize) {  // uniform per warp
    const long long v = base + q.lane;
    float dist = GV_INF;
    int id = -1;
    const int vid = v < end ? (ords != nullptr ? ords[v] : (int)v) : -1;
    if (v < end && accepted(acceptBits, vid)) {
      const float* x = vectors + v * dims;
      float acc0 = 0.f, acc1 = 0.f;
      if (vec4) {
        const float4* x4 = reinterpret_cast<const float4*>(x);
        const int d4 = dims >> 2;
#pragma unroll 4
        for (int d = 0; d < d4; ++d) {
          const float4 a = __ldg(x4 + d);
          const float4 b = sq4[d];
          if (ip) {
            acc0 = fmaf(a.x, b.x, acc0); acc1 = fmaf(a.y, b.y, acc1);
            acc0 = fmaf(a.z, b.z, acc0); acc1 = fmaf(a.w, b.w, acc1);
          } else {
            float t0 = a.x - b.x, t1 = a.y - b.y, t2 = a.z - b.z, t3 = a.w - b.w;
            acc0 = fmaf(t0, t0, acc0); acc1 = fmaf(t1, t1, acc1);
            acc0 = fmaf(t2, t2, acc0); acc1 = fmaf(t3, t3, acc1);
          }
        }
      } else {
        for (int d = 0; d < dims; ++d) {
          const float a = __ldg(x + d), b = sq[d];
          if (ip) acc0 = fmaf(a, b, acc0); else { float t = a - b; acc0 = fmaf(t, t, acc0); }
        }
      }
      const float s = acc0 + acc1;
      dist = ip ? -s : s;
      id = vid;
    }
    q.add(dist, id);
    q.check();
  }
  q.flush();
}

// Vectors a warp of scanVectorsByWarp reads at once.
constexpr int kInFlight = 4;

__device__ __forceinline__ float dot4(const float4 a, const float4 b) {
  return fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, a.w * b.w)));
}

__device__ __forceinline__ float squaredDistance4(const float4 a, const float4 b) {
  const float t0 = a.x - b.x, t1 = a.y - b.y, t2 = a.z - b.z, t3 = a.w - b.w;
  return fmaf(t0, t0, fmaf(t1, t1, fmaf(t2, t2, t3 * t3)));
}

// As scanVectors, but each vector's distance is computed by the whole warp (lanes over the dimensions,
// float4 loads: a warp reads 512 consecutive bytes of one row per step instead of 32 rows at once) and
// reduced with shuffles: the list scan's access pattern, where a block reads a few hundred vectors once.
// Warp w takes the 32 positions begin + w * 32 .. + 31 (striding by NW * 32); lane j ends up holding
// position j's key, so the queue is fed exactly as scanVectors feeds it. Rejected positions are skipped
// before any of their bytes are read.
template <int K, int T>
__device__ __forceinline__ void scanVectorsByWarp(WarpQueue<K, T>& q, const float* vectors, int dims, bool ip,
                                                  const float4* sq4, long long begin, long long end,
                                                  const int* ords, const unsigned long long* acceptBits) {
  constexpr int NW = Bucket<K>::Warps;
  const float* sq = reinterpret_cast<const float*>(sq4);
  const int warp = threadIdx.x / kWarpSize;
  const bool vec4 = (dims & 3) == 0;
  const int d4 = dims >> 2;
  for (long long base = begin + warp * kWarpSize; base < end; base += NW * kWarpSize) {  // uniform per warp
    const long long v = base + q.lane;
    const int vid = v < end ? (ords != nullptr ? ords[v] : (int)v) : -1;
    const bool take = v < end && accepted(acceptBits, vid);
    unsigned todo = __ballot_sync(kFullMask, take);
    float mine = GV_INF;
    while (todo != 0) {  // uniform: every lane holds the same mask
      // up to kInFlight vectors per step: independent loads keep a lone block's warps from waiting on
      // memory latency vector by vector (a small batch has few blocks); unused slots repeat the first
      int j[kInFlight];
      int used = 0;
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        j[u] = todo != 0 ? __ffs(todo) - 1 : j[0];
        if (todo != 0) {
          todo &= todo - 1;
          used = u + 1;
        }
      }
      float acc[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) acc[u] = 0.f;
      if (vec4) {
        for (int d = q.lane; d < d4; d += kWarpSize) {
          const float4 b = sq4[d];
#pragma unroll
          for (int u = 0; u < kInFlight; ++u) {
            const float4 a = __ldg(reinterpret_cast<const float4*>(vectors + (base + j[u]) * dims) + d);
            acc[u] += ip ? dot4(a, b) : squaredDistance4(a, b);
          }
        }
      } else {
        for (int d = q.lane; d < dims; d += kWarpSize) {
          const float b = sq[d];
#pragma unroll
          for (int u = 0; u < kInFlight; ++u) {
            const float a = __ldg(vectors + (base + j[u]) * dims + d);
            acc[u] = ip ? fmaf(a, b, acc[u]) : fmaf(a - b, a - b, acc[u]);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        float s = acc[u];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFullMask, s, o);
        if (u < used && q.lane == j[u]) mine = ip ? -s : s;
      }
    }
    q.add(mine, take ? vid : -1);
    q.check();
  }
  q.flush();
}

// Merges the warps' queues in shared memory into warp 0's, which writes the first k pairs (best
// first, values multiplied by outScale) at outK / outIdx. Every thread of the block calls it.
template <int K, int T>
__device__ __forceinline__ void mergeWarpsAndWrite(WarpQueue<K, T>& q, float* outK, int* outIdx, int k,
                                                   float outScale) {
  constexpr int NW = Bucket<K>::Warps;
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

}  // namespace gv
