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

// ---- Radix selection of a large k (the set of the k smallest, then sorted) ----
// WarpSelect and BlockSelect keep sorted queues of K per warp: at K = 512 one block over a few thousand values
// took 60-85 us (ncu), most of it in the queues' merges, and the IVF-PQ pass of one query ran three of
// them in a row (list scans, two merge levels). A radix selection (as in cuVS's select_k for large k) finds the
// k-th smallest value itself, digit by digit over the values' order-preserving bits: a histogram of the next
// digit among the values that share the digits found so far, and the bin where the count crosses k; then a pass
// gathers the values below that k-th value T and as many equal to T as k still needs (which of several equal
// values: arrival order), and a bitonic sort of the gathered (value, id) pairs by value, then id, orders them
// best first.
// The digits are taken of key - min (key: the value's order-preserving bits; min and max from a first pass), from
// the top bit of max - min, kRadixDigitBits at a time: a row's values span a small part of the 32-bit key space,
// and digits of the key itself put most of them in a few bins of the first histogram, whose shared-memory
// atomics then serialised (~160-210 us for a 63k-value row, ncu; warp-aggregated with __match_any_sync or per-
// warp histograms, no faster). Relative digits spread them over the bins. A pass stops early when its bin is
// taken whole. Values as SelectParams' epilogue reduced to inScale (norms, accept masks and clamping are not read:
// the launcher refuses them); NaN and +inf are never selected; a row's length is rowLens[row] when given.
// Several blocks per row: one block over a query's whole row was the longest stage of a one-query IVF-PQ pass
// (180 us of 277 for a 63k-value row, instruction-bound on one multiprocessor, ncu). Each pass is one launch
// over blocksPerRow slices of every row (gv_radix_range, gv_radix_digit up to three times, gv_radix_gather);
// the blocks of a row meet in its RadixRow in global memory, and the last block of the row to finish a pass
// (counted in `arrived`, after a fence) concludes it: the row's range, the digit's bin, the final sort.
// gv_radix_fused runs all the passes in one launch (cooperative, so that every block of the grid is resident): a
// row's blocks wait between passes until its last block has concluded the pass (passDone). Five launches were a
// third of the host time that enqueues a one-query IVF-PQ pass (JFR; the host, not the GPU, bounded concurrent
// searches). The state is read with __ldcg: within one launch a block's L1 may still hold what it read of the row
// before another block concluded a pass.
constexpr int kRadixThreads = 512;
constexpr int kRadixDigitBits = 12;
constexpr int kRadixBins = 1 << kRadixDigitBits;
constexpr int kRadixDigitPasses = 3;  // KSelect.RADIX_DIGIT_PASSES
static_assert(kRadixDigitPasses * kRadixDigitBits >= 32, "the digit passes resolve a 32-bit key");
constexpr int kRadixMaxK = 2048;  // KSelect.MAX_K
constexpr int kRadixUnroll = 8;   // independent loads per thread and step: the slice's reads in flight
constexpr unsigned kRadixNone = 0xffffffffu;  // the key of a value never selected

// One row's selection between the passes, in global memory: zeroed before the first pass (KSelect.radixSelect),
// then written by the atomics of every block and the conclusions of each pass's last block.
struct RadixRow {
  unsigned loInv;  // ~ the smallest key (an atomicMax of ~key, so that the zeroed state is neutral)
  unsigned hi;     // the largest key
  int valid;       // values that may be selected (not NaN, +inf, nor past the row's length)
  int arrived;     // blocks of the row done with the current pass
  unsigned prefix, mask;  // over key - lo: the digits found so far
  int remaining;   // how many of the values matching the prefix the selection still takes
  int top;         // bits of key - lo still to resolve; 0: none
  int all;         // every valid value is taken
  int complete;    // every value matching the prefix is taken
  int count;       // values gathered into selKey / selId
  int equal;       // values matching the whole prefix offered to the gather (when not complete)
  int passDone;    // gv_radix_fused: passes concluded (the row's blocks wait for it between passes)
  int unused[3];
  int hist[kRadixBins];           // the current digit's histogram, summed over the row's blocks
  unsigned selKey[kRadixMaxK];    // the gathered keys and ids, in arrival order
  int selId[kRadixMaxK];
};
static_assert(sizeof(RadixRow) == 32832, "RadixRow's size is KSelect.RADIX_ROW_BYTES");

// The exclusive prefix sum of each thread's c over the block (every thread calls it; warpSums holds 33 ints),
// and the block's total.
__device__ __forceinline__ int blockExclusiveSum(int c, int* warpSums, int& total) {
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int warp = threadIdx.x / kWarpSize;
  int exclusive;
  const int warpTotal = warpExclusiveSum(c, lane, exclusive);
  if (lane == 0) warpSums[warp] = warpTotal;
  __syncthreads();
  if (warp == 0) {
    const int w = lane < (int)(blockDim.x / kWarpSize) ? warpSums[lane] : 0;
    int before;
    const int all = warpExclusiveSum(w, lane, before);
    warpSums[lane] = before;  // each lane rewrites the slot it read
    if (lane == 0) warpSums[kWarpSize] = all;
  }
  __syncthreads();
  total = warpSums[kWarpSize];
  const int result = warpSums[warp] + exclusive;
  __syncthreads();  // warpSums is reused by the next call
  return result;
}

// The keys of this thread's kRadixUnroll values of the step at base (values base + r * blockDim.x + threadIdx.x), or
// kRadixNone for one never selected (NaN, +inf, past the slice's end): every load is issued before any value is
// tested, so the slice's reads are in flight at once. (Value by value, a branch on each loaded value came before the
// next load: one latency per value, which a lone block selecting a row from L2 could not hide.)
__device__ __forceinline__ void radixLoad(const SelectParams& p, const float* in, int base, int end,
                                          unsigned (&u)[kRadixUnroll]) {
  float v[kRadixUnroll];
#pragma unroll
  for (int r = 0; r < kRadixUnroll; ++r) {
    const int i = base + r * blockDim.x + threadIdx.x;
    v[r] = i < end ? __ldg(in + i) : __int_as_float(0x7fffffff);  // past the end: NaN, whatever inScale's sign
  }
#pragma unroll
  for (int r = 0; r < kRadixUnroll; ++r) {
    const float x = p.inScale * v[r];
    u[r] = x < GV_INF ? radixKey(x) : kRadixNone;  // false for NaN
  }
}

// This block's row and slice [begin, end) of it: blocks (row, 0 .. blocksPerRow - 1) split the row's length.
struct RadixSlice {
  int row, begin, end;
  const float* in;
};
__device__ __forceinline__ RadixSlice radixSlice(const SelectParams& p, int blocksPerRow) {
  RadixSlice s;
  s.row = blockIdx.x / blocksPerRow;
  const int part = blockIdx.x - s.row * blocksPerRow;
  const int len = p.rowLens != nullptr ? min(p.rowLens[s.row], p.len) : p.len;
  const long long per = ((long long)len + blocksPerRow - 1) / blocksPerRow;
  s.begin = (int)min((long long)len, part * per);
  s.end = (int)min((long long)len, s.begin + per);
  s.in = p.in + (long long)s.row * p.inRowStride;
  return s;
}

// Whether this block is the last of its row's blocksPerRow to finish the pass. Every block calls it once, after
// its writes to the row: each thread's fence orders its writes before the block's count, so the last block (which
// reads the row with __ldcg, past the non-coherent L1) sees every block's.
__device__ __forceinline__ bool radixLastBlock(RadixRow& w, int blocksPerRow) {
  __shared__ int sLast;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) sLast = atomicAdd(&w.arrived, 1) == blocksPerRow - 1;
  __syncthreads();
  return sLast;
}

// This block's values [begin, end) of the row at `in`: each thread's smallest and largest key, reduced over its warp
// and stored by lane 0 in warpMin / warpMax[warp] (the caller's barrier publishes them), and how many of the
// thread's values may be selected (returned); with `keys`, each key of a column below `held` also goes there.
__device__ __forceinline__ int radixWarpRange(const SelectParams& p, const float* in, int begin, int end,
                                              unsigned* keys, int held, unsigned* warpMin, unsigned* warpMax,
                                              unsigned& lo, unsigned& hi) {
  lo = kRadixNone;
  hi = 0;
  int valid = 0;
  for (int base = begin; base < end; base += blockDim.x * kRadixUnroll) {
    unsigned u[kRadixUnroll];
    radixLoad(p, in, base, end, u);
#pragma unroll
    for (int r = 0; r < kRadixUnroll; ++r) {
      const int i = base + r * blockDim.x + threadIdx.x;
      if (keys != nullptr && i < held) keys[i] = u[r];
      if (u[r] != kRadixNone) {
        lo = min(lo, u[r]);
        hi = max(hi, u[r]);
        ++valid;
      }
    }
  }
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o >>= 1) {
    lo = min(lo, __shfl_xor_sync(kFullMask, lo, o));
    hi = max(hi, __shfl_xor_sync(kFullMask, hi, o));
  }
  if ((threadIdx.x & (kWarpSize - 1)) == 0) {
    warpMin[threadIdx.x / kWarpSize] = lo;
    warpMax[threadIdx.x / kWarpSize] = hi;
  }
  return valid;
}

// Pass 0: the row's smallest and largest key and how many values may be selected; the last block sets the
// digits to resolve (the top bit of max - min) or marks the row as taken whole.
__device__ __forceinline__ bool radixRange(const SelectParams& p, RadixRow* rows, int blocksPerRow) {
  __shared__ int warpSums[kWarpSize + 1];
  __shared__ unsigned warpMin[kWarpSize], warpMax[kWarpSize];
  const RadixSlice s = radixSlice(p, blocksPerRow);
  RadixRow& w = rows[s.row];
  unsigned lo, hi;
  const int valid = radixWarpRange(p, s.in, s.begin, s.end, nullptr, 0, warpMin, warpMax, lo, hi);
  int total;
  blockExclusiveSum(valid, warpSums, total);  // its barriers also publish warpMin / warpMax
  if (threadIdx.x == 0 && total > 0) {
    for (int v = 0; v < (int)(blockDim.x / kWarpSize); ++v) { lo = min(lo, warpMin[v]); hi = max(hi, warpMax[v]); }
    atomicMax(&w.loInv, ~lo);
    atomicMax(&w.hi, hi);
    atomicAdd(&w.valid, total);
  }
  if (!radixLastBlock(w, blocksPerRow)) return false;
  if (threadIdx.x == 0) {
    const unsigned rowLo = ~__ldcg(&w.loInv);
    const bool all = __ldcg(&w.valid) <= p.k;
    const unsigned range = all ? 0u : __ldcg(&w.hi) - rowLo;
    w.top = range == 0 ? 0 : 32 - __clz(range);
    w.all = all;
    w.complete = all;  // range 0 and not all: k of the equal values, taken by the gather
    w.remaining = p.k;
    w.arrived = 0;
  }
  return true;
}

// One digit pass: each block's histogram of the next digit among its values that match the prefix, summed into
// the row's; the last block finds the bin where the count reaches `remaining` and extends the prefix. Rows whose
// selection is resolved (top 0, or the prefix's values taken whole) skip the pass (the same for all their blocks).
// Returns kRadixSkipped for a skipped pass, else whether this block concluded it.
constexpr int kRadixSkipped = -1;
__device__ __forceinline__ int radixDigit(const SelectParams& p, RadixRow* rows, int blocksPerRow) {
  __shared__ int hist[kRadixBins];
  __shared__ int warpSums[kWarpSize + 1];
  __shared__ int sBin, sBelow;
  const RadixSlice s = radixSlice(p, blocksPerRow);
  RadixRow& w = rows[s.row];
  const int top = __ldcg(&w.top);
  if (top == 0 || __ldcg(&w.complete)) return kRadixSkipped;
  const unsigned lo = ~__ldcg(&w.loInv), prefix = __ldcg(&w.prefix), mask = __ldcg(&w.mask);
  const int shift = max(0, top - kRadixDigitBits);
  const int bins = 1 << (top - shift);
  for (int b = threadIdx.x; b < bins; b += blockDim.x) hist[b] = 0;
  __syncthreads();
  for (int base = s.begin; base < s.end; base += blockDim.x * kRadixUnroll) {
    unsigned u[kRadixUnroll];
    radixLoad(p, s.in, base, s.end, u);
#pragma unroll
    for (int r = 0; r < kRadixUnroll; ++r) {
      const unsigned d = u[r] - lo;
      if (u[r] != kRadixNone && (d & mask) == prefix) atomicAdd(&hist[(d >> shift) & (unsigned)(bins - 1)], 1);
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += blockDim.x) {
    if (hist[b] != 0) atomicAdd(&w.hist[b], hist[b]);
  }
  if (!radixLastBlock(w, blocksPerRow)) return 0;
  for (int b = threadIdx.x; b < bins; b += blockDim.x) {
    hist[b] = __ldcg(&w.hist[b]);
    w.hist[b] = 0;  // zero for the next pass
  }
  __syncthreads();
  // the bin in which the running count reaches `remaining`: each thread sums bins / blockDim.x consecutive bins
  const int remaining = __ldcg(&w.remaining);
  const int per = (bins + blockDim.x - 1) / blockDim.x;
  const int b0 = threadIdx.x * per;
  int mine = 0;
  for (int b = b0; b < min(bins, b0 + per); ++b) mine += hist[b];
  int matching;
  int before = blockExclusiveSum(mine, warpSums, matching);
  for (int b = b0; b < min(bins, b0 + per); ++b) {
    if (before < remaining && before + hist[b] >= remaining) {
      sBin = b;
      sBelow = before;
    }
    before += hist[b];
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const int left = remaining - sBelow;
    w.remaining = left;
    w.complete = hist[sBin] == left;
    w.prefix = prefix | (unsigned)sBin << shift;
    w.mask = mask | (unsigned)(bins - 1) << shift;
    w.top = shift;
    w.arrived = 0;
  }
  return 1;
}

// The end of every radix selection: the row's `count` (<= k) gathered pairs in shared memory, in arrival order, in
// order of (key, id) with the k best written (-1 / inf past count): a few hundred ranked (rankOrder, in `scratch`:
// kRankOrderMax 64-bit words of shared memory), more sorted (bitonic, padded to a power of two). Every thread of
// the block calls it, after a barrier that published the pairs.
__device__ __forceinline__ void radixSortAndWrite(const SelectParams& p, int row, unsigned* selKey, int* selId,
                                                  int count, unsigned long long* scratch) {
  const long long o = (long long)row * p.outRowStride;
  if (count <= kRankOrderMax) {
    for (int e = threadIdx.x; e < count; e += blockDim.x) {
      scratch[e] = (unsigned long long)selKey[e] << 32 | (unsigned)selId[e];  // ids >= 0: same order as signed
    }
    rankAndWrite(scratch, count, p.k, p.outScale, p.outK + o, p.outIdx + o);
    return;
  }
  int size = 1;
  while (size < count) size <<= 1;
  for (int e = count + threadIdx.x; e < size; e += blockDim.x) {
    selKey[e] = kRadixNone;
    selId[e] = -1;
  }
  __syncthreads();
  for (int z = 2; z <= size; z <<= 1) {
    for (int j = z >> 1; j > 0; j >>= 1) {
      for (int e = threadIdx.x; e < size; e += blockDim.x) {
        const int l = e ^ j;
        if (l > e) {
          const bool up = (e & z) == 0;
          const bool greater = selKey[e] > selKey[l] || (selKey[e] == selKey[l] && selId[e] > selId[l]);
          if (greater == up) { swapT(selKey[e], selKey[l]); swapT(selId[e], selId[l]); }
        }
      }
      __syncthreads();
    }
  }
  for (int e = threadIdx.x; e < p.k; e += blockDim.x) {
    const bool full = e < count;
    p.outK[o + e] = p.outScale * (full ? radixValue(selKey[e]) : GV_INF);
    p.outIdx[o + e] = full ? selId[e] : -1;
  }
}

// The gather: every value whose digits are below the prefix, and of those equal to it all (complete) or
// `remaining` (the first to arrive), staged per block in shared memory and appended to the row's; the last block
// orders the row's gathered pairs by key then id and writes the k best (radixSortAndWrite).
__device__ __forceinline__ void radixGather(const SelectParams& p, RadixRow* rows, int blocksPerRow) {
  __shared__ unsigned selKey[kRadixMaxK];
  __shared__ int selId[kRadixMaxK];
  __shared__ unsigned long long scratch[kRankOrderMax];
  __shared__ int sCount, sBase;
  const RadixSlice s = radixSlice(p, blocksPerRow);
  RadixRow& w = rows[s.row];
  const int* ids = p.inIdx != nullptr ? p.inIdx + (long long)s.row * p.inRowStride : nullptr;
  const bool all = __ldcg(&w.all), complete = __ldcg(&w.complete);
  const unsigned lo = ~__ldcg(&w.loInv), prefix = __ldcg(&w.prefix), mask = __ldcg(&w.mask);
  const int remaining = __ldcg(&w.remaining);
  if (threadIdx.x == 0) sCount = 0;
  __syncthreads();
  for (int base = s.begin; base < s.end; base += blockDim.x * kRadixUnroll) {
    unsigned u[kRadixUnroll];
    radixLoad(p, s.in, base, s.end, u);
#pragma unroll
    for (int r = 0; r < kRadixUnroll; ++r) {
      if (u[r] == kRadixNone) continue;
      const unsigned d = (u[r] - lo) & mask;
      const bool take = all || d < prefix || (d == prefix && (complete || atomicAdd(&w.equal, 1) < remaining));
      if (take) {
        const int i = base + r * blockDim.x + threadIdx.x;
        const int at = atomicAdd(&sCount, 1);  // < k: the row's selection holds at most k values
        selKey[at] = u[r];
        selId[at] = ids != nullptr ? ids[i] : (int)(p.idxOffset + i);
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0 && sCount > 0) sBase = atomicAdd(&w.count, sCount);
  __syncthreads();
  for (int e = threadIdx.x; e < sCount; e += blockDim.x) {
    w.selKey[sBase + e] = selKey[e];
    w.selId[sBase + e] = selId[e];
  }
  if (!radixLastBlock(w, blocksPerRow)) return;
  const int count = __ldcg(&w.count);  // <= k
  for (int e = threadIdx.x; e < count; e += blockDim.x) {
    selKey[e] = __ldcg(&w.selKey[e]);
    selId[e] = __ldcg(&w.selId[e]);
  }
  __syncthreads();
  radixSortAndWrite(p, s.row, selKey, selId, count, scratch);
}

// Between two passes of gv_radix_fused: the block that concluded pass `pass` of its row publishes it (every
// thread's writes to the row fenced first); the row's other blocks wait until it is published. Every block of
// the row calls it with the same pass; the cooperative launch keeps them all resident, so the wait ends.
__device__ __forceinline__ void radixPassBarrier(RadixRow& w, bool concluded, int pass) {
  if (concluded) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) atomicExch(&w.passDone, pass);
    return;
  }
  if (threadIdx.x == 0) {
    while (atomicAdd(&w.passDone, 0) < pass) __nanosleep(100);
    __threadfence();
  }
  __syncthreads();
}

// Every pass of the radix selection in one launch: range, up to three digits (a resolved row's blocks stop
// together: all read the same published state), gather and sort.
__device__ __forceinline__ void radixFused(const SelectParams& p, RadixRow* rows, int blocksPerRow) {
  RadixRow& w = rows[blockIdx.x / blocksPerRow];
  int pass = 1;
  radixPassBarrier(w, radixRange(p, rows, blocksPerRow), pass);
  for (int digit = 0; digit < kRadixDigitPasses; ++digit) {
    const int concluded = radixDigit(p, rows, blocksPerRow);
    if (concluded == kRadixSkipped) break;
    radixPassBarrier(w, concluded == 1, ++pass);
  }
  radixGather(p, rows, blocksPerRow);
}

// ---- Radix selection of a short row in one block ----
// The passes above meet in global memory (each digit's 4096-bin histogram summed by global atomics, the last
// block's scan, fences and waits between passes): ~19-31 us of device time for one row of 2k-50k values whatever
// its length (ShortRowBench, the passes captured in a graph), the longest stage of a one-query IVF-PQ pass
// once its launches cost nothing. One block of kRadixBlockThreads selects a short row instead, its keys read once
// into shared memory (SelectConfig.radixBlockMaxLen). Its digits (kRadixBlockBits at a time, of key - min from the top
// bit of max - min, as above) are resolved by block histograms; once the values matching the digits found so far
// fit kRadixBlockCandidates, one pass copies them apart (and selects the values below them), and the later digits
// and the gather read only the copy: three passes over the row for most rows instead of one per digit. Same result
// as radixSelect up to which of several values equal to the k-th are taken (arrival order in both).
// A row longer than the block's shared memory (KSelect launches it so for rows of a typical length that fits, whose
// capacity, the longest a row may be, does not) keeps its first columns there and reads the rest from global memory
// on each pass over the row: the same selection, slower only for the rows that overflow.
constexpr int kRadixBlockThreads = 1024;
constexpr int kRadixBlockBits = 8;
constexpr int kRadixBlockBins = 1 << kRadixBlockBits;
constexpr int kRadixBlockCandidates = 2048;
static_assert(kRadixBlockCandidates * 4 >= kRankOrderMax * 8, "candKey holds radixSortAndWrite's scratch");

// fn(key, i) for every selectable value i < len of the row, kRadixUnroll a thread at a time: the keys of the first
// `held` columns from shared memory (rowKeys), a step that reaches past them from the row at `in` (every one of its
// values: a step's source is the same for the whole block).
template <typename F>
__device__ __forceinline__ void radixBlockRow(const SelectParams& p, const float* in, const unsigned* rowKeys,
                                              int held, int len, F fn) {
  for (int base = 0; base < len; base += blockDim.x * kRadixUnroll) {
    unsigned u[kRadixUnroll];
    if (held == len || base + (int)blockDim.x * kRadixUnroll <= held) {
#pragma unroll
      for (int r = 0; r < kRadixUnroll; ++r) {
        const int i = base + r * blockDim.x + threadIdx.x;
        u[r] = i < len ? rowKeys[i] : kRadixNone;
      }
    } else {
      radixLoad(p, in, base, len, u);
    }
#pragma unroll
    for (int r = 0; r < kRadixUnroll; ++r) {
      if (u[r] != kRadixNone) fn(u[r], base + r * blockDim.x + threadIdx.x);
    }
  }
}

__device__ __forceinline__ void radixBlock(const SelectParams& p) {
  extern __shared__ unsigned rowKeys[];  // the row's first `held` keys, kRadixNone for one never selected
  __shared__ int hist[kRadixBlockBins];
  __shared__ int warpSums[kWarpSize + 1];
  __shared__ unsigned warpMin[kWarpSize], warpMax[kWarpSize];
  __shared__ unsigned selKey[kRadixMaxK];
  __shared__ int selId[kRadixMaxK];
  __shared__ __align__(8) unsigned candKey[kRadixBlockCandidates];  // then radixSortAndWrite's scratch
  __shared__ int candAt[kRadixBlockCandidates];  // the candidate's column in the row
  __shared__ int sBin, sBelow, sCount, sEqual, sCand;
  const int row = blockIdx.x;
  const int len = p.rowLens != nullptr ? min(p.rowLens[row], p.len) : p.len;
  const float* in = p.in + (long long)row * p.inRowStride;
  const int* ids = p.inIdx != nullptr ? p.inIdx + (long long)row * p.inRowStride : nullptr;
  // the row's keys into shared memory (as many as it holds), with its smallest and largest key and how many values
  // may be selected
  unsigned sharedBytes;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(sharedBytes));
  const int held = min(len, (int)(sharedBytes / sizeof(unsigned)));
  unsigned lo, hi;
  const int valid = radixWarpRange(p, in, 0, len, rowKeys, held, warpMin, warpMax, lo, hi);
  if (threadIdx.x == 0) { sCount = 0; sEqual = 0; sCand = 0; }
  int total;
  blockExclusiveSum(valid, warpSums, total);  // its barriers also publish warpMin / warpMax, rowKeys and the counts
  for (int v = 0; v < (int)(blockDim.x / kWarpSize); ++v) { lo = min(lo, warpMin[v]); hi = max(hi, warpMax[v]); }
  const bool all = total <= p.k;
  int top = all || hi <= lo ? 0 : 32 - __clz(hi - lo);
  bool complete = all;  // range 0 and not all: k of the equal values, taken by the gather
  bool compacted = false;  // the values still in play are the candKey / candAt copy, not the row
  int cands = 0;
  unsigned prefix = 0, mask = 0;
  int remaining = p.k;
  auto select = [&](unsigned u, int i) {
    const int at = atomicAdd(&sCount, 1);  // < k: the selection holds at most k values
    selKey[at] = u;
    selId[at] = ids != nullptr ? ids[i] : (int)(p.idxOffset + i);
  };
  // each digit: the histogram of the values matching the prefix, the bin where the count reaches `remaining`
  while (top > 0 && !complete) {
    const int shift = max(0, top - kRadixBlockBits);
    const int bins = 1 << (top - shift);
    for (int b = threadIdx.x; b < bins; b += blockDim.x) hist[b] = 0;
    __syncthreads();
    auto count = [&](unsigned u, int) {
      const unsigned d = u - lo;
      if ((d & mask) == prefix) atomicAdd(&hist[(d >> shift) & (unsigned)(bins - 1)], 1);
    };
    if (compacted) {
      for (int c = threadIdx.x; c < cands; c += blockDim.x) count(candKey[c], 0);
    } else {
      radixBlockRow(p, in, rowKeys, held, len, count);
    }
    __syncthreads();
    const int c = (int)threadIdx.x < bins ? hist[threadIdx.x] : 0;  // bins <= kRadixBlockBins <= blockDim.x
    int matching;
    const int before = blockExclusiveSum(c, warpSums, matching);
    if ((int)threadIdx.x < bins && before < remaining && before + c >= remaining) {
      sBin = threadIdx.x;
      sBelow = before;
    }
    __syncthreads();
    const int left = remaining - sBelow;
    const int inBin = hist[sBin];
    complete = inBin == left;
    prefix |= (unsigned)sBin << shift;
    mask |= (unsigned)(bins - 1) << shift;
    top = shift;
    remaining = left;
    __syncthreads();  // hist and sBin are rewritten by the next digit
    if (!compacted && !complete && top > 0 && inBin <= kRadixBlockCandidates) {
      // the values below the prefix are selected, those matching it copied: later passes read the copy only
      radixBlockRow(p, in, rowKeys, held, len, [&](unsigned u, int i) {
        const unsigned d = (u - lo) & mask;
        if (d < prefix) {
          select(u, i);
        } else if (d == prefix) {
          const int at = atomicAdd(&sCand, 1);  // < inBin
          candKey[at] = u;
          candAt[at] = i;
        }
      });
      __syncthreads();
      compacted = true;
      cands = sCand;
    }
  }
  // the gather: every value whose digits are below the prefix, and of those equal to it all (complete) or
  // `remaining` (the first to arrive); after the copy, the values below it at the copy are selected already
  auto gather = [&](unsigned u, int i) {
    const unsigned d = (u - lo) & mask;
    if (all || d < prefix || (d == prefix && (complete || atomicAdd(&sEqual, 1) < remaining))) select(u, i);
  };
  if (compacted) {
    for (int c = threadIdx.x; c < cands; c += blockDim.x) gather(candKey[c], candAt[c]);
  } else {
    radixBlockRow(p, in, rowKeys, held, len, gather);
  }
  __syncthreads();
  radixSortAndWrite(p, row, selKey, selId, sCount, reinterpret_cast<unsigned long long*>(candKey));
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

// Radix selection, any k up to 2048: blocksPerRow blocks of kRadixThreads per row, one launch per pass, the rows'
// state in `rows` (KSelect.radixSelect launches the passes in this order: range, digit x 3, gather).
__global__ void __launch_bounds__(gv::kRadixThreads) gv_radix_range(SelectParams p, gv::RadixRow* rows,
                                                                    int blocksPerRow) {
  gv::radixRange(p, rows, blocksPerRow);
}
__global__ void __launch_bounds__(gv::kRadixThreads) gv_radix_digit(SelectParams p, gv::RadixRow* rows,
                                                                    int blocksPerRow) {
  gv::radixDigit(p, rows, blocksPerRow);
}
__global__ void __launch_bounds__(gv::kRadixThreads) gv_radix_gather(SelectParams p, gv::RadixRow* rows,
                                                                     int blocksPerRow) {
  gv::radixGather(p, rows, blocksPerRow);
}
// A short row's radix selection in one block (KSelect.radixSelect): one block of kRadixBlockThreads per row, p.len x 4
// bytes of dynamic shared memory. One block an SM as the bound: with the default, ptxas capped it at 32 registers
// (two blocks an SM) and spilled.
__global__ void __launch_bounds__(gv::kRadixBlockThreads, 1) gv_radix_block(SelectParams p) { gv::radixBlock(p); }
// All the passes above in one cooperative launch (KSelect.radixSelect, when the grid fits on the device at once).
__global__ void __launch_bounds__(gv::kRadixThreads) gv_radix_fused(SelectParams p, gv::RadixRow* rows,
                                                                    int blocksPerRow) {
  gv::radixFused(p, rows, blocksPerRow);
}
}
