// Exact search, fused distance + BlockSelect for small query batches. Layout: grid.x = query,
// grid.y = chunk of vectors (queries vary fastest, so blocks working on the same chunk run together
// and share it through L2). Each block handles a single (query, chunk): the query sits in shared
// memory, each lane computes whole distances of its own vectors, each warp keeps a WarpSelect
// queue, and the warps are merged in shared memory. The chunks' k-lists are merged by a
// BlockSelect pass (inIdx mode) on the host side's request.
#include "select.cuh"

namespace gv {

template <int K>
__device__ __forceinline__ void fusedSearch(const FusedParams& p) {
  constexpr int NW = Bucket<K>::Warps;
  __shared__ float sk[(NW - 1) * K];
  __shared__ int sv[(NW - 1) * K];
  extern __shared__ float4 sq4[];  // dims floats (dynamic shared memory)
  float* sq = reinterpret_cast<float*>(sq4);
  const int query = blockIdx.x;
  const int chunk = blockIdx.y;
  const float* qrow = p.queries + (long long)query * p.dims;
  for (int d = threadIdx.x; d < p.dims; d += blockDim.x) sq[d] = qrow[d];
  __syncthreads();
  const long long begin = (long long)chunk * p.chunkLen;
  const long long end = min(p.n, begin + p.chunkLen);
  const int warp = threadIdx.x / kWarpSize;
  WarpQueue<K, Bucket<K>::T> q;
  q.init();
  const bool vec4 = (p.dims & 3) == 0;
  const bool ip = p.metric == 1;
  for (long long base = begin + warp * kWarpSize; base < end; base += NW * kWarpSize) {
    const long long v = base + q.lane;
    float dist = GV_INF;
    int id = -1;
    if (v < end && accepted(p.acceptBits, v)) {
      const float* x = p.vectors + v * p.dims;
      float acc0 = 0.f, acc1 = 0.f;
      if (vec4) {
        const float4* x4 = reinterpret_cast<const float4*>(x);
        const int d4 = p.dims >> 2;
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
        for (int d = 0; d < p.dims; ++d) {
          const float a = __ldg(x + d), b = sq[d];
          if (ip) acc0 = fmaf(a, b, acc0); else { float t = a - b; acc0 = fmaf(t, t, acc0); }
        }
      }
      const float s = acc0 + acc1;
      dist = ip ? -s : s;
      id = (int)v;
    }
    q.add(dist, id);
    q.check();
  }
  q.flush();
  if (warp > 0) q.store(sk + (warp - 1) * K, sv + (warp - 1) * K);
  __syncthreads();
  if (warp == 0) {
    for (int w = 1; w < NW; ++w) q.mergeShared(sk + (w - 1) * K, sv + (w - 1) * K);
    const long long o = (long long)query * p.outRowStride + (long long)chunk * p.k;
    q.write(p.outK + o, p.outIdx + o, p.k, ip ? -1.f : 1.f);
  }
}

// ||x||^2 per row of a row-major matrix (L2 via GEMM needs vector and query norms).
__device__ __forceinline__ void rowNorms(const float* x, long long rows, int dims, float* out) {
  const long long r = (long long)blockIdx.x * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
  if (r >= rows) return;
  const int lane = threadIdx.x & (kWarpSize - 1);
  float s = 0.f;
  for (int d = lane; d < dims; d += kWarpSize) { const float a = x[r * dims + d]; s = fmaf(a, a, s); }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFullMask, s, o);
  if (lane == 0) out[r] = s;
}

}  // namespace gv

using gv::FusedParams;
extern "C" {
__global__ void __launch_bounds__(128) gv_fused_search_k32(FusedParams p) { gv::fusedSearch<32>(p); }
__global__ void __launch_bounds__(128) gv_fused_search_k64(FusedParams p) { gv::fusedSearch<64>(p); }
__global__ void __launch_bounds__(128) gv_fused_search_k128(FusedParams p) { gv::fusedSearch<128>(p); }
__global__ void __launch_bounds__(128) gv_fused_search_k256(FusedParams p) { gv::fusedSearch<256>(p); }
__global__ void __launch_bounds__(128) gv_fused_search_k512(FusedParams p) { gv::fusedSearch<512>(p); }
__global__ void __launch_bounds__(128) gv_fused_search_k1024(FusedParams p) { gv::fusedSearch<1024>(p); }
__global__ void __launch_bounds__(64) gv_fused_search_k2048(FusedParams p) { gv::fusedSearch<2048>(p); }
// 256 threads = 8 rows per block.
__global__ void __launch_bounds__(256) gv_row_norms(const float* x, long long rows, int dims, float* out) {
  gv::rowNorms(x, rows, dims, out);
}
}
