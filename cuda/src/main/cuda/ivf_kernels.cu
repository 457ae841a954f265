// IVF-Flat list scan: the second step of an IVF-Flat search (GpuIvfFlatIndex.java), after the coarse
// step chose each query's nprobe lists with the exact-search primitive over the centroids, and before
// a BlockSelect pass (inIdx mode) merges each query's nprobe k-lists into its k best.
// Layout: grid.x = query, grid.y = probe rank. Each block handles a single (query, probed list): the
// query sits in dynamic shared memory, the list's vectors (contiguous: vectors are stored in list
// order) are scanned a vector per warp step (vector_scan.cuh: lanes over the dimensions, coalesced
// loads, one WarpSelect queue per warp, warps merged in shared memory), the accept mask is
// tested by ordinal, and the block writes the list's k best (distance, ordinal) pairs; a list shorter
// than k (or with fewer accepted vectors, or no list: probe id -1) leaves empty slots (id -1).
#include "vector_scan.cuh"

namespace gv {

template <int K>
__device__ __forceinline__ void ivfFlatScan(const IvfScanParams& p) {
  extern __shared__ float4 sq4[];  // dims floats (dynamic shared memory)
  const int query = blockIdx.x;
  const int probe = blockIdx.y;
  loadQuery(sq4, p.queries + (long long)query * p.dims, p.dims);
  const int list = p.probes[(long long)query * p.nprobe + probe];
  const long long begin = list >= 0 ? p.listOffsets[list] : 0;
  const long long end = list >= 0 ? p.listOffsets[list + 1] : 0;
  const unsigned long long* accept =
      p.acceptBits != nullptr ? p.acceptBits + query * p.acceptRowWords : nullptr;
  const bool ip = p.metric == 1;
  WarpQueue<K, Bucket<K>::T> q;
  // threshold at the K-th (bucket) value, as the fused kernel: init(p.k)'s run-time threshold position
  // made nvcc spill at K = 512 and 2048 (sm_90)
  q.init();
  scanVectorsByWarp(q, p.vectors, p.dims, ip, sq4, begin, end, p.ords, accept);
  const long long o = (long long)query * p.outRowStride + (long long)probe * p.k;
  mergeWarpsAndWrite(q, p.outK + o, p.outIdx + o, p.k, ip ? -1.f : 1.f);
}

}  // namespace gv

using gv::IvfScanParams;
// Stable names for the JCuda driver API, one per k bucket; 128 threads (4 warps), 64 for k2048 (as
// BlockSelect and the fused search: KSelect.blockSelectThreads).
extern "C" {
__global__ void __launch_bounds__(128) gv_ivf_flat_scan_k32(IvfScanParams p) { gv::ivfFlatScan<32>(p); }
__global__ void __launch_bounds__(128) gv_ivf_flat_scan_k64(IvfScanParams p) { gv::ivfFlatScan<64>(p); }
__global__ void __launch_bounds__(128) gv_ivf_flat_scan_k128(IvfScanParams p) { gv::ivfFlatScan<128>(p); }
__global__ void __launch_bounds__(128) gv_ivf_flat_scan_k256(IvfScanParams p) { gv::ivfFlatScan<256>(p); }
__global__ void __launch_bounds__(128) gv_ivf_flat_scan_k512(IvfScanParams p) { gv::ivfFlatScan<512>(p); }
__global__ void __launch_bounds__(128) gv_ivf_flat_scan_k1024(IvfScanParams p) { gv::ivfFlatScan<1024>(p); }
__global__ void __launch_bounds__(64) gv_ivf_flat_scan_k2048(IvfScanParams p) { gv::ivfFlatScan<2048>(p); }
}
