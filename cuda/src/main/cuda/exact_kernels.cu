// Exact search, fused distance + BlockSelect for small query batches. Layout: grid.x = query,
// grid.y = chunk of vectors (queries vary fastest, so blocks working on the same chunk run together
// and share it through L2). Each block handles a single (query, chunk) with the block scan of
// vector_scan.cuh (shared with the IVF-Flat list scan): the query sits in shared memory, each lane
// computes whole distances of its own vectors, each warp keeps a WarpSelect queue, and the warps are
// merged in shared memory. The chunks' k-lists are merged by a BlockSelect pass (inIdx mode) on the
// host side's request.
#include "vector_scan.cuh"

namespace gv {

template <int K>
__device__ __forceinline__ void fusedSearch(const FusedParams& p) {
  extern __shared__ float4 sq4[];  // dims floats (dynamic shared memory)
  const int query = blockIdx.x;
  const int chunk = blockIdx.y;
  loadQuery(sq4, p.queries + (long long)query * p.dims, p.dims);
  const long long begin = (long long)chunk * p.chunkLen;
  const long long end = min(p.n, begin + p.chunkLen);
  const bool ip = p.metric == 1;
  WarpQueue<K, Bucket<K>::T> q;
  q.init();
  scanVectors(q, p.vectors, p.dims, ip, sq4, begin, end, nullptr, p.acceptBits);
  const long long o = (long long)query * p.outRowStride + (long long)chunk * p.k;
  mergeWarpsAndWrite(q, p.outK + o, p.outIdx + o, p.k, ip ? -1.f : 1.f);
}

// Several small indexes' searches in one launch, one chunk each (the coarse steps of the segments of a pass that
// share one candidate selection, SharedKeySelection.java; GpuFlatIndex.enqueueSmallTable writes this layout, passed
// by value): entry z = blockIdx.z, query blockIdx.x; a block past its entry's queries returns at once. Entries share
// dims (the dynamic shared memory holds one query) and the k bucket.
constexpr int kFusedTableEntries = 48;  // 8 + 48 x 80 bytes: within a launch's 4 KB of parameters
using FusedTable = ParamTable<FusedParams, kFusedTableEntries>;
static_assert(sizeof(FusedTable) == 8 + kFusedTableEntries * sizeof(FusedParams),
              "FusedTable's layout is FusedTable.java's");

template <int K>
__device__ __forceinline__ void fusedSearchTable(const FusedTable& t) {
  const FusedParams* p = blockEntry(t);
  if (p == nullptr || (int)blockIdx.x >= p->numQueries || (int)blockIdx.y >= p->chunks) return;
  fusedSearch<K>(*p);
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
// The table launch, for the k buckets of a coarse step's nprobe (GpuFlatIndex.TABLE_MAX_BUCKET).
__global__ void __launch_bounds__(128) gv_fused_search_table_k32(const __grid_constant__ gv::FusedTable t) {
  gv::fusedSearchTable<32>(t);
}
__global__ void __launch_bounds__(128) gv_fused_search_table_k64(const __grid_constant__ gv::FusedTable t) {
  gv::fusedSearchTable<64>(t);
}
__global__ void __launch_bounds__(128) gv_fused_search_table_k128(const __grid_constant__ gv::FusedTable t) {
  gv::fusedSearchTable<128>(t);
}
// 256 threads = 8 rows per block.
__global__ void __launch_bounds__(256) gv_row_norms(const float* x, long long rows, int dims, float* out) {
  gv::rowNorms(x, rows, dims, out);
}
}
