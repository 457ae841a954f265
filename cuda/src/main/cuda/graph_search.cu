// Graph index search (GpuGraphIndex.java): best-first beam search over a fixed-degree proximity graph, one thread
// block per query, after SONG (Zhao et al., ICDE 2020: each iteration in three decoupled stages, candidate
// locating, bulk distance computation, data-structure maintenance) and CAGRA's single-CTA search (Ootomo et al.
// 2023: the internal top-M list, the candidate buffer and a small visited set in shared memory, the set reset when
// full).
//
// Per query (block):
//   start: the distances to all seeds (in batches), the best of them fill the internal list (M = width entries,
//          sorted by key, each marked expanded or not);
//   loop:  1. locate: warp 0 takes the `parents` best not-yet-expanded entries of the list and marks them expanded
//             (none left: the search has converged and stops; also after maxIterations rounds);
//          2. compute: their neighbour rows fill the candidate buffer; each candidate is tested against and
//             inserted into the visited set (already visited: dropped), then teams of teamSize threads compute the
//             new candidates' distances (float4 loads when dims % 4 == 0);
//          3. maintain: the candidates are sorted (bitonic, in shared memory) and merged into the list, keeping its
//             M best (a parallel merge by ranks); with an accept mask, the accepted candidates are also merged into
//             a second list of the k best accepted nodes (every node is traversed, only accepted ones returned).
//   result: the first k of the list, or of the accepted list when there is a mask.
// Keys are smaller-is-better: squared L2, or -x.q for inner product (cosine: normalised vectors and query); NaN
// keys count as +inf (never selected).
//
// The visited set: a Bloom filter of p.hashWords words (two bits per id, atomicOr), cleared at a 1/16 fill
// (false-positive rate ~1.4 %: such a node is skipped as if visited). It took the same recall as an exact hash table
// of ids with fewer shared-memory probes per id, so it is the only one. A batch is tested against the filter as it
// was before the batch, then added, so results do not depend on thread timing; an id twice in one batch (two
// parents' rows, repeated seeds) looks new twice, and the copy is dropped after the candidate sort, where the two
// are adjacent.
// After a clear, the ids of both lists are inserted again: a node in a list is never a candidate again, and a node
// evicted earlier can come back only as a candidate no better than the list's last entry, which the merge drops
// (ties go to the list): the lists never hold an id twice and no node is expanded twice.
//
// One kernel for every width, k and dims (the sizes are run-time: all buffers in dynamic shared memory), so the
// build adds a single instantiation per architecture.
#include "common.cuh"

namespace gv {

// Up to 1024 threads: a batch of a few queries leaves most multiprocessors idle, and a wide block gives each query
// more distance teams (the kernel needs 32 registers a thread, so the bound costs the narrow launches nothing).
constexpr int kGraphMaxThreads = 1024;
constexpr int kGraphMaxParents = 32;  // also one popcount slot per warp in the accept compaction: 32 warps at most
static_assert(kGraphMaxThreads / kWarpSize <= kGraphMaxParents, "one parents[] slot per warp");
constexpr unsigned kGraphExpanded = 0x80000000u;  // list ids: expanded flag; -1 = empty slot

// 32-bit words of dynamic shared memory a block needs; GpuGraphIndex.sharedBytes computes the same.
__device__ __forceinline__ int graphSharedWords(const GraphSearchParams& p) {
  return ((p.dims + 3) & ~3) + 4 * p.width + 2 * p.k + 4 * p.batch + kGraphMaxParents + 4 + p.hashWords;
}

__device__ __forceinline__ unsigned mixId(unsigned x) {  // murmur3 finaliser
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  x ^= x >> 16;
  return x;
}

// The two bits of id in a Bloom filter of `words` 32-bit words.
__device__ __forceinline__ void bloomBits(int words, int id, unsigned& b1, unsigned& b2) {
  const unsigned bits = (unsigned)words * 32u - 1u;
  const unsigned h = mixId((unsigned)id);
  b1 = h & bits;
  b2 = mixId(h ^ 0x9e3779b9u) & bits;
}

__device__ __forceinline__ bool bloomContains(const unsigned* table, int words, int id) {
  unsigned b1, b2;
  bloomBits(words, id, b1, b2);
  return ((table[b1 >> 5] >> (b1 & 31)) & (table[b2 >> 5] >> (b2 & 31)) & 1u) != 0;
}

__device__ __forceinline__ void bloomAdd(unsigned* table, int words, int id) {
  unsigned b1, b2;
  bloomBits(words, id, b1, b2);
  atomicOr(table + (b1 >> 5), 1u << (b1 & 31));
  atomicOr(table + (b2 >> 5), 1u << (b2 & 31));
}

// Number of keys[0..len) < key (strict) or <= key: keys ascending.
__device__ __forceinline__ int rankOf(const float* keys, int len, float key, bool orEqual) {
  int lo = 0, hi = len;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    const float v = keys[mid];
    if (v < key || (orEqual && v == key)) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// Merges the ascending candidates (ck, ci)[0..count) into the ascending list (lk, li)[0..len), keeping its len best
// (equal keys: list entries first), through (tk, ti). Every thread calls; ends with a barrier.
__device__ __forceinline__ void mergeList(float* lk, int* li, int len, const float* ck, const int* ci, int count,
                                          float* tk, int* ti) {
  for (int i = threadIdx.x; i < len; i += blockDim.x) {
    const float key = lk[i];
    const int pos = i + rankOf(ck, count, key, false);
    if (pos < len) { tk[pos] = key; ti[pos] = li[i]; }
  }
  for (int j = threadIdx.x; j < count; j += blockDim.x) {
    const float key = ck[j];
    const int pos = j + rankOf(lk, len, key, true);
    if (pos < len) { tk[pos] = key; ti[pos] = ci[j]; }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < len; i += blockDim.x) { lk[i] = tk[i]; li[i] = ti[i]; }
  __syncthreads();
}

// Sorts (key, id) pairs [0..count) ascending by key, then id (count: a power of two). Ends with a barrier.
__device__ __forceinline__ void sortPairs(float* k, int* v, int count) {
  for (int size = 2; size <= count; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < (count >> 1); i += blockDim.x) {
        const int lo = 2 * i - (i & (stride - 1));
        const int hi = lo + stride;
        const bool asc = (lo & size) == 0;
        const float a = k[lo], b = k[hi];
        const int va = v[lo], vb = v[hi];
        const bool greater = a > b || (a == b && va > vb);
        if (greater == asc) { k[lo] = b; k[hi] = a; v[lo] = vb; v[hi] = va; }
      }
      __syncthreads();
    }
  }
}

// Key of vector x for the query in shared memory, computed by a team of T lanes (tl: the lane's place in the team,
// mask: the team's lanes); every lane of the team gets it. Smaller = better.
__device__ __forceinline__ float teamKey(const float* x, const float4* q4, int dims, bool ip, int tl, int T,
                                         unsigned mask) {
  float acc = 0.f;
  if ((dims & 3) == 0) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const int d4 = dims >> 2;
#pragma unroll 4
    for (int d = tl; d < d4; d += T) {
      const float4 a = __ldg(x4 + d);
      const float4 b = q4[d];
      if (ip) {
        acc = fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, fmaf(a.w, b.w, acc))));
      } else {
        const float t0 = a.x - b.x, t1 = a.y - b.y, t2 = a.z - b.z, t3 = a.w - b.w;
        acc = fmaf(t0, t0, fmaf(t1, t1, fmaf(t2, t2, fmaf(t3, t3, acc))));
      }
    }
  } else {
    const float* q = reinterpret_cast<const float*>(q4);
    for (int d = tl; d < dims; d += T) {
      const float a = __ldg(x + d), b = q[d];
      acc = ip ? fmaf(a, b, acc) : fmaf(a - b, a - b, acc);
    }
  }
  for (int o = T >> 1; o > 0; o >>= 1) acc += __shfl_xor_sync(mask, acc, o);
  const float key = ip ? -acc : acc;
  return key < GV_INF ? key : GV_INF;  // NaN -> +inf
}

// Searches query `query` of p (one block).
__device__ __forceinline__ void graphSearch(const GraphSearchParams& p, const int query) {
  extern __shared__ float4 graphShared4[];
  {
    unsigned dynamicBytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamicBytes));
    // the host sized shared memory or the visited set wrong (a cleared set must take two lists and a batch)
    const int limit = p.hashWords * 2;
    if (dynamicBytes < 4u * (unsigned)graphSharedWords(p) || p.width + p.k + p.batch > limit) __trap();
  }
  if (query >= p.numQueries) return;  // uniform over the block
  const int M = p.width;
  const int K = p.k;
  const int B = p.batch;
  const bool ip = p.metric == 1;
  float4* q4 = graphShared4;
  float* listK = reinterpret_cast<float*>(graphShared4) + ((p.dims + 3) & ~3);
  int* listI = reinterpret_cast<int*>(listK + M);
  float* tmpK = reinterpret_cast<float*>(listI + M);
  int* tmpI = reinterpret_cast<int*>(tmpK + M);
  float* accK = reinterpret_cast<float*>(tmpI + M);
  int* accI = reinterpret_cast<int*>(accK + K);
  float* candK = reinterpret_cast<float*>(accI + K);
  int* candI = reinterpret_cast<int*>(candK + B);
  float* compK = reinterpret_cast<float*>(candI + B);
  int* compI = reinterpret_cast<int*>(compK + B);
  int* parents = compI + B;
  int* flags = parents + kGraphMaxParents;  // [0]: parents found this round
  unsigned* table = reinterpret_cast<unsigned*>(flags + 4);
  const unsigned long long* accept =
      p.acceptBits != nullptr ? p.acceptBits + (long long)query * p.acceptRowWords : nullptr;

  const float* qrow = p.queries + (long long)query * p.dims;
  float* sq = reinterpret_cast<float*>(q4);
  for (int d = threadIdx.x; d < p.dims; d += blockDim.x) sq[d] = qrow[d];
  for (int i = threadIdx.x; i < M; i += blockDim.x) { listK[i] = GV_INF; listI[i] = -1; }
  for (int i = threadIdx.x; i < K; i += blockDim.x) { accK[i] = GV_INF; accI[i] = -1; }
  for (int i = threadIdx.x; i < p.hashWords; i += blockDim.x) table[i] = 0u;
  __syncthreads();

  // the visited set is cleared before a batch could take it past this many inserts
  const int limit = p.hashWords * 2;
  int inserted = 0;  // an upper bound, the same in every thread
  const int T = p.teamSize;
  const int teams = blockDim.x / T;
  const int team = threadIdx.x / T;
  const int tl = threadIdx.x % T;
  const unsigned teamMask = T == kWarpSize ? kFullMask : ((1u << T) - 1u) << ((threadIdx.x % kWarpSize) / T * T);

  // One batch of candidate ids at candI[0..B) (-1: none): visited test, distances, sort, merge into the lists.
  auto process = [&]() {
    if (inserted + B > limit) {
      __syncthreads();
      for (int i = threadIdx.x; i < p.hashWords; i += blockDim.x) table[i] = 0u;
      __syncthreads();
      for (int i = threadIdx.x; i < M + K; i += blockDim.x) {
        const int id = i < M ? listI[i] : accI[i - M];
        if (id == -1) continue;
        bloomAdd(table, p.hashWords, id & ~kGraphExpanded);
      }
      inserted = M + K;
      __syncthreads();
    }
    inserted += B;
    bool any = false;
    for (int j = threadIdx.x; j < B; j += blockDim.x) {
      int id = candI[j];
      // tested against the set as it was before this batch (so the outcome does not depend on the order of the
      // threads' inserts), the batch's ids added after the barrier
      if (id >= 0 && bloomContains(table, p.hashWords, id)) id = -1;
      candI[j] = id;
      candK[j] = GV_INF;
      any |= id >= 0;
    }
    if (__syncthreads_or(any) == 0) return;  // nothing new: the lists stay as they are
    for (int j = threadIdx.x; j < B; j += blockDim.x) {
      if (candI[j] >= 0) bloomAdd(table, p.hashWords, candI[j]);
    }
    for (int j = team; j < B; j += teams) {  // uniform per team
      const int id = candI[j];
      if (id < 0) continue;
      const float key = teamKey(p.vectors + (long long)id * p.dims, q4, p.dims, ip, tl, T, teamMask);
      if (tl == 0) candK[j] = key;
    }
    __syncthreads();
    sortPairs(candK, candI, B);
    // one id inserted twice in this batch (two parents' rows, or repeated seeds): adjacent after the sort
    bool dup = false;
    for (int j = 1 + threadIdx.x; j < B; j += blockDim.x) dup |= candI[j] >= 0 && candI[j] == candI[j - 1];
    if (__syncthreads_or(dup)) {
      // keep the first of each run: the flags go to compI (free until the compaction below) before any write
      for (int j = threadIdx.x; j < B; j += blockDim.x) compI[j] = j > 0 && candI[j] >= 0 && candI[j] == candI[j - 1];
      __syncthreads();
      for (int j = threadIdx.x; j < B; j += blockDim.x) {
        if (compI[j]) { candK[j] = GV_INF; candI[j] = -1; }
      }
      __syncthreads();
      sortPairs(candK, candI, B);
    }
    mergeList(listK, listI, M, candK, candI, B, tmpK, tmpI);
    if (accept != nullptr) {
      // compact the accepted candidates (still ascending) into compK / compI, then merge them into the k best
      int total = 0;
      for (int j0 = 0; j0 < B; j0 += blockDim.x) {  // uniform
        const int j = j0 + threadIdx.x;
        const int id = j < B ? candI[j] : -1;
        const bool ok = id >= 0 && candK[j] < GV_INF && accepted(accept, id);
        const unsigned ballot = __ballot_sync(kFullMask, ok);
        const int warp = threadIdx.x / kWarpSize;
        const int lane = threadIdx.x % kWarpSize;
        if (lane == 0) parents[warp] = __popc(ballot);  // the parents were read before this batch: free here
        __syncthreads();
        int before = total;
        for (int w = 0; w < warp; ++w) before += parents[w];
        for (int w = 0; w < (int)(blockDim.x / kWarpSize); ++w) total += parents[w];
        if (ok) {
          const int at = before + __popc(ballot & ((1u << lane) - 1u));
          compK[at] = candK[j];
          compI[at] = id;
        }
        __syncthreads();
      }
      if (total > 0) mergeList(accK, accI, K, compK, compI, total, tmpK, tmpI);
    }
  };

  for (int s0 = 0; s0 < p.numSeeds; s0 += B) {  // start: every seed
    for (int j = threadIdx.x; j < B; j += blockDim.x) candI[j] = s0 + j < p.numSeeds ? p.seeds[s0 + j] : -1;
    process();
    __syncthreads();
  }
  const int P = p.parents;
  for (int it = 0; it < p.maxIterations; ++it) {
    // 1. locate: the P best entries not yet expanded (the list is sorted), marked expanded
    if (threadIdx.x < kWarpSize) {
      const int lane = threadIdx.x;
      int found = 0;
      for (int base = 0; base < M && found < P; base += kWarpSize) {  // uniform over the warp
        const int i = base + lane;
        const int id = i < M ? listI[i] : -1;
        const bool open = id >= 0;
        const unsigned ballot = __ballot_sync(kFullMask, open);
        const int rank = found + __popc(ballot & ((1u << lane) - 1u));
        if (open && rank < P) {
          parents[rank] = id;
          listI[i] = id | (int)kGraphExpanded;
        }
        found += __popc(ballot);
      }
      if (lane == 0) flags[0] = min(found, P);
    }
    __syncthreads();
    const int np = flags[0];
    if (np == 0) break;  // converged: every entry of the list is expanded (uniform)
    // 2. their neighbours
    for (int j = threadIdx.x; j < B; j += blockDim.x) {
      const int par = j / p.degree;
      candI[j] = par < np ? p.graph[(long long)parents[par] * p.degree + (j - par * p.degree)] : -1;
    }
    process();
    __syncthreads();
  }

  // result: the k best (of the accepted list when there is a mask)
  const float* rk = accept != nullptr ? accK : listK;
  const int* ri = accept != nullptr ? accI : listI;
  const float outScale = ip ? -1.f : 1.f;
  float* outK = p.outK + (long long)query * K;
  int* outIdx = p.outIdx + (long long)query * K;
  for (int i = threadIdx.x; i < K; i += blockDim.x) {
    const int id = ri[i];
    const bool none = id == -1 || !(rk[i] < GV_INF);
    outK[i] = outScale * (none ? GV_INF : rk[i]);
    outIdx[i] = none ? -1 : (id & ~(int)kGraphExpanded);
  }
}

}  // namespace gv

using gv::GraphSearchParams;
using gv::GraphSearchTable;
// Stable names for the JCuda driver API: one block of 64..1024 threads per query (GraphConfig.threads).
extern "C" {
__global__ void __launch_bounds__(gv::kGraphMaxThreads) gv_graph_search(GraphSearchParams p) {
  gv::graphSearch(p, blockIdx.x);
}

// Several graphs' searches in one launch (the segments of an index, GpuGraphIndex.enqueueWalks): blocks go to the
// entries in order, entry e taking numQueries blocks. One launch instead of one per segment lets a pass of a few
// queries over many segments fill the GPU; the launch's dynamic shared memory is the largest entry's need (the
// kernel checks each entry against it). __grid_constant__: the table is read in place from the parameter bank,
// never copied per thread.
__global__ void __launch_bounds__(gv::kGraphMaxThreads) gv_graph_search_table(const __grid_constant__ GraphSearchTable t) {
  int entry = 0;
  int first = 0;  // every thread finds its block's entry the same way (a few dozen reads of the parameter bank)
  while (entry < t.entries && (int)blockIdx.x >= first + t.entry[entry].numQueries) {
    first += t.entry[entry].numQueries;
    ++entry;
  }
  if (entry >= t.entries) return;  // uniform over the block
  gv::graphSearch(t.entry[entry], (int)blockIdx.x - first);
}
}
