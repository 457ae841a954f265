// Nearest codewords on the device (CodebookAssign.java): for every point and every group (sub-space) of its floats,
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
