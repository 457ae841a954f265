// Exact search of byte, bit and bfloat16 rows (GpuElementFlatIndex): the vectors stay at their own size on the device
// (a byte a dimension, a bit a dimension, two bytes a dimension) and are scored in the arithmetic their size allows:
//
//   byte:  four signed bytes a 32-bit word, products with 32-bit integer accumulation (__dp4a); squared L2 as the
//          dp4a of the per-byte absolute differences (__vabsdiffs4: |x - q| <= 255 fits a byte, its square does not),
//          so no norms are stored; cosine from the dot product and both squared norms, all exact integers, divided in
//          double as Lucene's VectorUtil.cosine(byte[], byte[]) divides.
//   bit:   32 bits a word, the Hamming distance as the popcount of x ^ q (__popc): the squared L2 of 0/1 vectors.
//   bf16:  two bfloat16 values a word (__nv_bfloat162), widened to FP32 and accumulated in FP32 against the FP32
//          query, as the CPU scores the bfloat16 values it reads back as floats.
//
// Integer distances are exact, and converted to float once, rounding to nearest as Java's (float) int does: the codec's
// Lucene scores from them are those Lucene computes on the CPU.
//
// Ties: integer distances tie often (a Hamming distance takes at most 8 x bytes + 1 values), and the selection keeps
// any of the rows tied at the k-th distance, where Lucene keeps the lowest doc ids (its collectors rank equal scores by
// doc, and ordinals follow docs). So byte and bit searches scan twice (GpuElementFlatIndex): the k best, then the tie
// scan (bestK given) keeps, of the rows at exactly the k-th distance, the k lowest ids (selected by id: the float
// whose bits are a non-negative int orders as that int), and gv_element_splice writes the lowest of them into the
// results' tied slots.
//
// Layout (as the fused float search, exact_kernels.cu): grid.x = query, grid.y = chunk of rows; each block packs its
// query into shared memory like a row, each lane scores whole rows of its own (16-byte loads when the row pitch allows
// them), each warp keeps a WarpSelect queue (select.cuh) and the warps are merged in shared memory
// (mergeWarpsAndWrite); the chunks' k-lists are merged by a selection pass on the host side's request.
#include <cuda_bf16.h>

#include <type_traits>

#include "vector_scan.cuh"

namespace gv {

enum class Element { Byte, Bit, Bf16 };

// The query's values a 32-bit word of a row holds.
template <Element E>
__device__ __forceinline__ constexpr int valuesPerWord() {
  return E == Element::Bf16 ? 2 : 4;
}

// Byte v of a byte or bit query: its low 8 bits (a stored byte passed as a float, signed -128..127 or 0..255).
__device__ __forceinline__ unsigned queryByte(const float* qrow, int d, int dims) {
  return d < dims ? (static_cast<unsigned>(__float2int_rn(qrow[d])) & 0xffu) : 0u;
}

// Packs the query into shared memory as the rows are stored: byte and bit queries into rowWords words of four bytes
// (zeros past dims, which add nothing to any distance: the rows are zero-padded too); bf16 queries stay FP32,
// rowWords * 2 floats. Every thread of the block calls it; it ends with a barrier.
template <Element E>
__device__ __forceinline__ void packQuery(unsigned* qw, float* qf, const float* qrow, int dims, int rowWords) {
  if constexpr (E == Element::Bf16) {
    for (int d = threadIdx.x; d < 2 * rowWords; d += blockDim.x) qf[d] = d < dims ? qrow[d] : 0.f;
  } else {
    for (int w = threadIdx.x; w < rowWords; w += blockDim.x) {
      const int d = 4 * w;
      qw[w] = queryByte(qrow, d, dims) | (queryByte(qrow, d + 1, dims) << 8) | (queryByte(qrow, d + 2, dims) << 16) |
              (queryByte(qrow, d + 3, dims) << 24);
    }
  }
  __syncthreads();
}

// The query's squared norm for cosine (exact integer for bytes, FP32 sums for bf16), by warp 0 into *out; read after
// the next barrier.
template <Element E>
__device__ __forceinline__ void queryNorm(const unsigned* qw, const float* qf, int rowWords, double* out) {
  if (threadIdx.x >= kWarpSize) return;
  double s;
  if constexpr (E == Element::Bf16) {
    float f = 0.f;
    for (int d = threadIdx.x; d < 2 * rowWords; d += kWarpSize) f = fmaf(qf[d], qf[d], f);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) f += __shfl_xor_sync(kFullMask, f, o);
    s = f;
  } else {
    int n = 0;
    for (int w = threadIdx.x; w < rowWords; w += kWarpSize) n = __dp4a((int)qw[w], (int)qw[w], n);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) n += __shfl_xor_sync(kFullMask, n, o);
    s = n;
  }
  if (threadIdx.x == 0) *out = s;
}

// Running sums of one row against the query: the byte form (integers), the bf16 form (floats).
struct ByteSums {
  unsigned sq = 0;  // squared L2
  int dot = 0;      // x.q
  int xx = 0;       // ||x||^2 (cosine)
  __device__ __forceinline__ void add(unsigned x, unsigned q, int metric) {
    if (metric == 0) {
      const unsigned d = __vabsdiffs4(x, q);  // per byte |x - q| as an unsigned byte
      sq = __dp4a(d, d, sq);
    } else {
      dot = __dp4a((int)x, (int)q, dot);
      if (metric == 2) xx = __dp4a((int)x, (int)x, xx);
    }
  }
};

struct BitSums {
  unsigned sq = 0;  // Hamming distance
  __device__ __forceinline__ void add(unsigned x, unsigned q, int) { sq += __popc(x ^ q); }
};

struct Bf16Sums {
  float sq = 0.f, dot = 0.f, xx = 0.f;
  __device__ __forceinline__ void add(unsigned x, const float* q, int metric) {
    __nv_bfloat162 h;
    *reinterpret_cast<unsigned*>(&h) = x;
    const float2 f = __bfloat1622float2(h);  // .x the lower half: value 2w, .y value 2w + 1
    if (metric == 0) {
      const float t0 = f.x - q[0], t1 = f.y - q[1];
      sq = fmaf(t0, t0, sq);
      sq = fmaf(t1, t1, sq);
    } else {
      dot = fmaf(f.x, q[0], dot);
      dot = fmaf(f.y, q[1], dot);
      if (metric == 2) {
        xx = fmaf(f.x, f.x, xx);
        xx = fmaf(f.y, f.y, xx);
      }
    }
  }
};

template <Element E>
using Sums = typename std::conditional<E == Element::Byte, ByteSums,
                                       typename std::conditional<E == Element::Bit, BitSums, Bf16Sums>::type>::type;

// Feeds word w of a row (value x) to the sums.
template <Element E>
__device__ __forceinline__ void addWord(Sums<E>& s, unsigned x, int w, const unsigned* qw, const float* qf,
                                        int metric) {
  if constexpr (E == Element::Bf16) {
    s.add(x, qf + 2 * w, metric);
  } else {
    s.add(x, qw[w], metric);
  }
}

// The key of one row (smaller = better): squared L2 or Hamming distance, -x.q, -cos(x, q).
template <Element E>
__device__ __forceinline__ float rowKey(const unsigned* row, int rowWords, const unsigned* qw, const float* qf,
                                        int metric, double qq) {
  Sums<E> s;
  if ((rowWords & 3) == 0) {  // 16-byte aligned rows (the pitch is a multiple of 4 words): four words a load
    const uint4* row4 = reinterpret_cast<const uint4*>(row);
#pragma unroll 4
    for (int w4 = 0; w4 < (rowWords >> 2); ++w4) {
      const uint4 x = __ldg(row4 + w4);
      const int w = w4 << 2;
      addWord<E>(s, x.x, w, qw, qf, metric);
      addWord<E>(s, x.y, w + 1, qw, qf, metric);
      addWord<E>(s, x.z, w + 2, qw, qf, metric);
      addWord<E>(s, x.w, w + 3, qw, qf, metric);
    }
  } else {
    for (int w = 0; w < rowWords; ++w) addWord<E>(s, __ldg(row + w), w, qw, qf, metric);
  }
  if constexpr (E == Element::Bit) {
    return __uint2float_rn(s.sq);
  } else if constexpr (E == Element::Byte) {
    if (metric == 0) return __uint2float_rn(s.sq);
    if (metric == 1) return -__int2float_rn(s.dot);
    // Lucene: (float) (dot / Math.sqrt((double) ||x||^2 * (double) ||q||^2)); NaN for a zero vector, never selected
    return -__double2float_rn((double)s.dot / sqrt((double)s.xx * qq));
  } else {
    if (metric == 0) return s.sq;
    if (metric == 1) return -s.dot;
    return -__double2float_rn((double)s.dot / sqrt((double)s.xx * qq));
  }
}

template <int K, Element E>
__device__ __forceinline__ void elementScan(const ElementScanParams& p) {
  constexpr int NW = Bucket<K>::Warps;
  extern __shared__ float4 smem4[];  // the packed query: rowWords words (byte, bit) or 2 x rowWords floats (bf16)
  __shared__ double queryNorm2;
  unsigned* qw = reinterpret_cast<unsigned*>(smem4);
  float* qf = reinterpret_cast<float*>(smem4);
  const int query = blockIdx.x;
  const int chunk = blockIdx.y;
  packQuery<E>(qw, qf, p.queries + (long long)query * p.dims, p.dims, p.rowWords);
  if (p.metric == 2) queryNorm<E>(qw, qf, p.rowWords, &queryNorm2);
  __syncthreads();
  const double qq = p.metric == 2 ? queryNorm2 : 0.0;
  const unsigned long long* mask =
      p.acceptBits == nullptr ? nullptr : p.acceptBits + (long long)query * p.acceptRowWords;
  // the tie scan: the key of the k-th result (stored as outScale x key); +inf (fewer than k results: none tied past
  // them) selects nothing
  const bool ties = p.bestK != nullptr;
  const float tieKey = ties ? (p.metric == 0 ? 1.f : -1.f) * p.bestK[(long long)query * p.bestRowStride + p.k - 1]
                            : 0.f;
  const long long begin = (long long)chunk * p.chunkLen;
  const long long end = min(p.n, begin + p.chunkLen);
  WarpQueue<K, Bucket<K>::T> q;
  q.init(p.k);
  const int warp = threadIdx.x / kWarpSize;
  for (long long base = begin + warp * kWarpSize; base < end; base += NW * kWarpSize) {  // uniform per warp
    const long long v = base + q.lane;
    float key = GV_INF;
    int id = -1;
    if (v < end && accepted(mask, v) && !(ties && tieKey == GV_INF)) {
      key = rowKey<E>(p.vectors + v * p.rowWords, p.rowWords, qw, qf, p.metric, qq);
      id = (int)v;
      if (ties) key = key == tieKey ? __int_as_float(id) : GV_INF;  // by id among the tied rows alone
    }
    q.add(key, id);  // +inf (rejected, past the end) and NaN never enter
    q.check();
  }
  q.flush();
  const long long o = (long long)query * p.outRowStride + (long long)chunk * p.k;
  mergeWarpsAndWrite(q, p.outK + o, p.outIdx + o, p.k, ties || p.metric == 0 ? 1.f : -1.f);
}

// The splice after a tie scan: block = query. The results at bestK / bestIdx are sorted, so the rows tied at the k-th
// distance fill the slots from the first one equal to it (c) to k; they take the lowest tied ids, the first k - c of
// the tie scan's list at outK / outIdx (ascending ids; it holds every tied row's, at least k - c).
__device__ __forceinline__ void elementSplice(const ElementScanParams& p) {
  __shared__ int first;
  const long long b = (long long)blockIdx.x * p.bestRowStride;
  const long long t = (long long)blockIdx.x * p.outRowStride;
  if (p.bestIdx[b + p.k - 1] < 0) return;  // fewer than k results: no tie was cut (uniform over the block)
  const float kth = p.bestK[b + p.k - 1];
  if (threadIdx.x == 0) first = p.k - 1;
  __syncthreads();
  for (int i = threadIdx.x; i < p.k; i += blockDim.x) {
    if (p.bestK[b + i] == kth) atomicMin(&first, i);
  }
  __syncthreads();
  for (int j = first + threadIdx.x; j < p.k; j += blockDim.x) p.bestIdx[b + j] = p.outIdx[t + j - first];
}

}  // namespace gv

using gv::ElementScanParams;
extern "C" {
// Dynamic shared memory: 4 x rowWords bytes (byte, bit), 8 x rowWords (bf16) (GpuElementFlatIndex). Threads: the
// bucket's warps (KSelect.blockSelectThreads: 128, 64 for k 2048).
#define GV_ELEMENT_SCAN(NAME, E, K, THREADS)                                                               \
  __global__ void __launch_bounds__(THREADS) gv_element_scan_##NAME##_k##K(ElementScanParams p) { \
    gv::elementScan<K, gv::Element::E>(p);                                                                 \
  }
#define GV_ELEMENT_SCANS(NAME, E)        \
  GV_ELEMENT_SCAN(NAME, E, 32, 128)      \
  GV_ELEMENT_SCAN(NAME, E, 64, 128)      \
  GV_ELEMENT_SCAN(NAME, E, 128, 128)     \
  GV_ELEMENT_SCAN(NAME, E, 256, 128)     \
  GV_ELEMENT_SCAN(NAME, E, 512, 128)     \
  GV_ELEMENT_SCAN(NAME, E, 1024, 128)    \
  GV_ELEMENT_SCAN(NAME, E, 2048, 64)
GV_ELEMENT_SCANS(byte, Byte)
GV_ELEMENT_SCANS(bit, Bit)
GV_ELEMENT_SCANS(bf16, Bf16)
// grid: a block per query, 128 threads
__global__ void __launch_bounds__(128) gv_element_splice(ElementScanParams p) { gv::elementSplice(p); }
}
