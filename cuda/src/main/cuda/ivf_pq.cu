// IVF-PQ list scan (IVFADC, after Faiss's GPU IVFPQ): the second step of an IVF-PQ search
// (GpuIvfPqIndex.java), after the coarse step chose each query's nprobe lists (the centroids' exact search, as
// for IVF-Flat), and before a BlockSelect pass merges each query's nprobe k-lists into its k best.
// Layout: grid.x = query, grid.y = probe rank; one block per (query, probed list), Bucket<K>::Warps warps.
//  1. the query goes to shared memory: for L2 as the residual query - centroid (the codes quantize residuals),
//     for inner product as itself, with <query, centroid> summed over the block (the list's base score);
//  2. the lookup table, m x 2^bits floats (in dynamic shared memory, or in global memory when it does not fit:
//     p.tables): entry (j, c) = || r_j - codeword_{j,c} ||^2 (L2) or < q_j, codeword_{j,c} > (inner product),
//     one entry per thread, in exactly the CPU's order and rounding (ProductQuantizer.l2Table /
//     innerProductTable: float products and sums, no FMA, d ascending);
//  3. the list's codes, one vector per lane (its m bytes, 16-byte chunks of the interleaved layout): approximate
//     distance = sum_j table[j][code_j] in j order, as ProductQuantizer.distance sums it (L2, smallest first),
//     or score = base + that sum (inner product, largest first: the queue keeps -score); accept mask by
//     ordinal; one WarpSelect queue per warp, the warps merged in shared memory (vector_scan.cuh), the list's
//     k best written (empty slots id -1).
// A list of -1 (no list, e.g. a NaN query) or an empty list writes k empty slots.
#include "vector_scan.cuh"

namespace gv {

// Sum of v over the block's NW warps (every thread calls; red: NW floats of shared memory). All threads get
// the same value (the warps' sums added in warp order).
template <int NW>
__device__ __forceinline__ float blockSum(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  if ((threadIdx.x & (kWarpSize - 1)) == 0) red[threadIdx.x / kWarpSize] = v;
  __syncthreads();
  float s = 0.f;
#pragma unroll
  for (int w = 0; w < NW; ++w) s += red[w];
  return s;
}

// Floats of dynamic shared memory before the table: the query / residual (dims rounded up to 4) and the
// block-sum scratch (32 floats). GpuIvfPqIndex.sharedBytes computes the same.
__device__ __forceinline__ int pqTableOffset(int dims) { return ((dims + 3) & ~3) + 32; }

template <int K>
__device__ __forceinline__ void ivfPqScan(const IvfPqScanParams& p) {
  constexpr int NW = Bucket<K>::Warps;
  extern __shared__ float4 pqShared4[];
  float* sq = reinterpret_cast<float*>(pqShared4);  // dims: the query (inner product) or the residual (L2)
  float* red = sq + ((p.dims + 3) & ~3);            // 32 floats
  const int query = blockIdx.x;
  const int probe = blockIdx.y;
  const long long pair = (long long)query * p.nprobe + probe;
  const int list = p.probes[pair];
  const bool ip = p.metric == 1;
  const int bits = p.bits;
  const int ksub = 1 << bits;
  const int m = p.m;
  const int subDims = p.dims / m;
  const int tableFloats = m << bits;
  float* table = p.tables != nullptr ? p.tables + pair * tableFloats : sq + pqTableOffset(p.dims);
  float base = 0.f;
  long long begin = 0, end = 0;
  if (list >= 0) {  // uniform over the block: the barriers below are reached by every thread or none
    begin = p.listOffsets[list];
    end = p.listOffsets[list + 1];
    const float* qrow = p.queries + (long long)query * p.dims;
    const float* c = p.centroids + (long long)list * p.dims;
    float part = 0.f;
    for (int d = threadIdx.x; d < p.dims; d += blockDim.x) {
      const float x = qrow[d];
      const float cd = __ldg(c + d);
      if (ip) {
        sq[d] = x;
        part = fmaf(x, cd, part);
      } else {
        sq[d] = __fsub_rn(x, cd);
      }
    }
    base = blockSum<NW>(part, red);  // its barrier also publishes sq
    for (int e = threadIdx.x; e < tableFloats; e += blockDim.x) {
      const float* w = p.codebooks + (long long)e * subDims;
      const float* r = sq + (e >> bits) * subDims;
      float s = 0.f;
      for (int d = 0; d < subDims; ++d) {
        if (ip) {
          s = __fadd_rn(s, __fmul_rn(r[d], __ldg(w + d)));
        } else {
          const float t = __fsub_rn(r[d], __ldg(w + d));
          s = __fadd_rn(s, __fmul_rn(t, t));
        }
      }
      table[e] = s;
    }
    __syncthreads();  // the table (shared or global) is complete and visible to the whole block
  }
  const unsigned long long* accept = p.acceptBits != nullptr ? p.acceptBits + query * p.acceptRowWords : nullptr;
  WarpQueue<K, Bucket<K>::T> q;
  q.init();  // threshold at the K-th (bucket) value, as the IVF-Flat scan (no run-time threshold position)
  const int warp = threadIdx.x / kWarpSize;
  const int chunks = pqCodeChunks(m);
  for (long long b = begin + warp * kWarpSize; b < end; b += NW * kWarpSize) {  // uniform per warp
    const long long v = b + q.lane;
    float key = GV_INF;
    int id = -1;
    if (v < end) {
      const int ord = p.ords[v];
      if (accepted(accept, ord)) {
        float s = 0.f;
        for (int c = 0; c < chunks; ++c) {  // the interleaved layout (common.cuh), sub-codes in j order
          const uint4 x = __ldg(pqCodeChunk(p.codes, v, chunks, c));
          const unsigned words[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
          for (int i = 0; i < kPqCodeChunkBytes; ++i) {
            const int j = c * kPqCodeChunkBytes + i;
            if (j < m) s = __fadd_rn(s, table[(j << bits) + ((words[i / 4] >> (8 * (i % 4))) & (ksub - 1))]);
          }
        }
        key = ip ? -__fadd_rn(base, s) : s;
        id = ord;
      }
    }
    q.add(key, id);
    q.check();
  }
  q.flush();
  const long long o = (long long)query * p.outRowStride + (long long)probe * p.k;
  mergeWarpsAndWrite(q, p.outK + o, p.outIdx + o, p.k, ip ? -1.f : 1.f);
}

}  // namespace gv

using gv::IvfPqScanParams;
// Stable names for the JCuda driver API, one per k bucket (the codec's re-rank depth reaches 2048); 128 threads
// (4 warps), 64 for k2048, as the IVF-Flat scan (KSelect.blockSelectThreads). A minimum of one block per SM: with
// the default bound nvcc capped k64 and k1024 below their needs and spilled (sm_90, -Xptxas -v); a table in
// shared memory limits the blocks per SM more than registers do anyway.
extern "C" {
__global__ void __launch_bounds__(128, 1) gv_ivf_pq_scan_k32(IvfPqScanParams p) { gv::ivfPqScan<32>(p); }
__global__ void __launch_bounds__(128, 1) gv_ivf_pq_scan_k64(IvfPqScanParams p) { gv::ivfPqScan<64>(p); }
__global__ void __launch_bounds__(128, 1) gv_ivf_pq_scan_k128(IvfPqScanParams p) { gv::ivfPqScan<128>(p); }
__global__ void __launch_bounds__(128, 1) gv_ivf_pq_scan_k256(IvfPqScanParams p) { gv::ivfPqScan<256>(p); }
__global__ void __launch_bounds__(128, 1) gv_ivf_pq_scan_k512(IvfPqScanParams p) { gv::ivfPqScan<512>(p); }
__global__ void __launch_bounds__(128, 1) gv_ivf_pq_scan_k1024(IvfPqScanParams p) { gv::ivfPqScan<1024>(p); }
__global__ void __launch_bounds__(64) gv_ivf_pq_scan_k2048(IvfPqScanParams p) { gv::ivfPqScan<2048>(p); }
}
