// k-means steps on the device (GpuAssignment.java), for the points it holds there.
//
// Nearest codewords (gv_codebook_assign_*): for every point and every group (sub-space) of its floats,
// the codeword of that group's codebook at the smallest squared L2 distance, ties to the lower index, as the host's
// Assigner.CPU decides. What it serves: k-means of the m codebooks of a product quantizer (all m sub-quantizers in
// one launch per Lloyd iteration; one brute-force search per sub-quantizer was m small GEMMs, each a GPU call), and
// encoding every vector of a segment. A codebook has few codewords (2^bits <= 256) of few floats, so each thread
// takes one point and walks the whole codebook, which its block keeps in shared memory when it fits; distances are
// the sums of squared differences (no ||x||^2 - 2 x.c + ||c||^2 expansion: the winner of a near tie stays the one
// the host picks up to float rounding of the sum).
#include "common.cuh"

namespace gv {

constexpr int kAssignThreads = 128;  // points per block (CodebookAssign.THREADS)
constexpr int kAssignTile = 8;       // codewords scored together: each float of the point is read once per tile

// kSub > 0: sub-vectors of exactly kSub floats (the default codes' 4 and 8), held in registers, each codeword read
// as float4s from shared memory; kSub == 0: any length, read as it goes.
template <bool kSharedCodebook, int kSub>
__device__ __forceinline__ void codebookAssign(const CodebookAssignParams& p, float* shared) {
  const int g = blockIdx.y;
  const int subDims = kSub > 0 ? kSub : p.subDims;
  const int k = p.k;
  const float* book = p.codebooks + (long long)g * k * subDims;
  if (kSharedCodebook) {
    for (int e = threadIdx.x; e < k * subDims; e += blockDim.x) shared[e] = __ldg(book + e);
    __syncthreads();
    book = shared;
  }
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= p.count) return;
  const float* x = p.points + i * p.dims + (long long)g * subDims;
  float best = GV_INF;
  int bestIdx = 0;
  if (kSub > 0) {
    float xr[kSub > 0 ? kSub : 1];
#pragma unroll
    for (int d = 0; d < kSub; d++) xr[d] = __ldg(x + d);
    for (int c = 0; c < k; c++) {
      const float4* w = reinterpret_cast<const float4*>(book + c * kSub);
      float acc = 0.f;
#pragma unroll
      for (int q = 0; q < kSub / 4; q++) {
        const float4 v = w[q];
        float diff = xr[4 * q] - v.x;
        acc = fmaf(diff, diff, acc);
        diff = xr[4 * q + 1] - v.y;
        acc = fmaf(diff, diff, acc);
        diff = xr[4 * q + 2] - v.z;
        acc = fmaf(diff, diff, acc);
        diff = xr[4 * q + 3] - v.w;
        acc = fmaf(diff, diff, acc);
      }
      if (acc < best) {  // strictly smaller: ties keep the lower index
        best = acc;
        bestIdx = c;
      }
    }
  } else {
    for (int c0 = 0; c0 < k; c0 += kAssignTile) {
      float acc[kAssignTile];
#pragma unroll
      for (int t = 0; t < kAssignTile; t++) acc[t] = 0.f;
      for (int d = 0; d < subDims; d++) {
        const float xd = __ldg(x + d);
#pragma unroll
        for (int t = 0; t < kAssignTile; t++) {
          const int c = min(c0 + t, k - 1);  // a partial last tile scores codeword k - 1 again, never chosen twice
          const float diff = xd - book[c * subDims + d];
          acc[t] = fmaf(diff, diff, acc[t]);
        }
      }
#pragma unroll
      for (int t = 0; t < kAssignTile; t++) {
        if (c0 + t < k && acc[t] < best) {  // strictly smaller: ties keep the lower index
          best = acc[t];
          bestIdx = c0 + t;
        }
      }
    }
  }
  p.out[i * p.groups + g] = bestIdx;
}

static_assert(sizeof(CodebookAssignParams) == 48, "CodebookAssignParams.java writes 48 bytes");
static_assert(sizeof(CentroidMeansParams) == 64, "CentroidMeansParams.java writes 64 bytes");

constexpr int kMeansThreads = 256;  // threads per block of the update kernels (GpuAssignment.MEANS_THREADS)

// The largest |x| of n floats, as its bits (non-negative floats order as their bits) into *out (zeroed first).
__device__ __forceinline__ void absMax(const float* x, long long n, unsigned* out) {
  unsigned m = 0;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
    m = max(m, __float_as_uint(fabsf(__ldg(x + e))));
  }
  for (int o = kWarpSize / 2; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(kFullMask, m, o));
  if ((threadIdx.x & (kWarpSize - 1)) == 0) atomicMax(out, m);
}

// Adds every float of every point into its centroid's fixed-point sum, and counts each sub-vector once.
__device__ __forceinline__ void centroidSums(const CentroidMeansParams& p) {
  const int dims = p.groups * p.subDims;
  const long long n = p.count * dims;
  const double scale = ldexp(1.0, p.scaleLog2);
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
    const long long i = e / dims;
    const int f = (int)(e - i * dims);
    const int g = f / p.subDims;
    const int d = f - g * p.subDims;
    const int c = __ldg(p.assignment + i * p.groups + g);
    const long long slot = ((long long)g * p.k + c) * p.subDims + d;
    const long long v = __double2ll_rn((double)__ldg(p.points + e) * scale);
    atomicAdd(p.sums + slot, (unsigned long long)v);
    if (d == 0) atomicAdd(p.counts + (long long)g * p.k + c, 1);
  }
}

__device__ __forceinline__ void centroidMeans(const CentroidMeansParams& p) {
  const long long n = (long long)p.groups * p.k * p.subDims;
  const double scale = ldexp(1.0, p.scaleLog2);
  for (long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x; s < n; s += (long long)gridDim.x * blockDim.x) {
    const int count = p.counts[s / p.subDims];
    p.means[s] = count > 0 ? (float)((double)(long long)p.sums[s] / scale / count) : 0.f;
  }
}

}  // namespace gv

#define GV_CODEBOOK_ASSIGN(name, shared, sub)                                                      \
  extern "C" __global__ void __launch_bounds__(gv::kAssignThreads) name(gv::CodebookAssignParams p) { \
    extern __shared__ float4 codebook[]; /* float4: the codeword reads of kSub > 0 are aligned */  \
    gv::codebookAssign<shared, sub>(p, reinterpret_cast<float*>(codebook));                       \
  }

// The codebook in shared memory: sub-vectors of 4 or 8 floats, or any length.
GV_CODEBOOK_ASSIGN(gv_codebook_assign_s4, true, 4)
GV_CODEBOOK_ASSIGN(gv_codebook_assign_s8, true, 8)
GV_CODEBOOK_ASSIGN(gv_codebook_assign_shared, true, 0)
// The codebook read from global memory (through L1): a codebook larger than the block's shared memory.
GV_CODEBOOK_ASSIGN(gv_codebook_assign_global, false, 0)

extern "C" __global__ void __launch_bounds__(gv::kMeansThreads) gv_abs_max(const float* x, long long n, unsigned* out) {
  gv::absMax(x, n, out);
}

extern "C" __global__ void __launch_bounds__(gv::kMeansThreads) gv_centroid_sums(gv::CentroidMeansParams p) {
  gv::centroidSums(p);
}

extern "C" __global__ void __launch_bounds__(gv::kMeansThreads) gv_centroid_means(gv::CentroidMeansParams p) {
  gv::centroidMeans(p);
}
