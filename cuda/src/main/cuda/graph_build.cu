// Graph build on the device (GraphPrune.java): step (2) of a graph build, CAGRA's rank-based pruning of the
// k-NN graph (Ootomo et al. 2023), the same computation as the host's GraphPruner.prune (lucene-codec), row by row:
// in row i (the k-NN list of vector i, nearest first), the edge i -> j at rank r is detourable via the edge
// i -> v at rank s when j is at rank t of v's own list and max(s, t) < r; the `degree` edges with the fewest
// detours are kept, ties by rank. One warp per row: the row's ordinals go into an open-addressing table in shared
// memory (ordinal -> rank), then each via's row is read coalesced (32 entries a step) and looked up, the detours
// counted with shared atomics; each edge's place is the number of edges with a smaller key (detours * 512 + rank,
// unique per row). No block barriers: every warp works alone.
#include <climits>

#include "common.cuh"

namespace gv {

constexpr int kPruneWarps = 8;  // rows per block (GraphPrune.WARPS)

// Slots of a row's table: the power of two >= 2k (load factor <= 1/2).
__device__ __forceinline__ int pruneTableSlots(int k) {
  int h = 1;
  while (h < 2 * k) h <<= 1;
  return h;
}

__device__ __forceinline__ int pruneSlot(int id, int mask) { return (int)(((unsigned)id * 2654435761u) >> 7) & mask; }

// The rank of ordinal id in the row's table, -1 when the row does not hold it.
__device__ __forceinline__ int pruneRank(const int* ids, const int* ranks, int mask, int id) {
  for (int h = pruneSlot(id, mask);; h = (h + 1) & mask) {
    const int v = ids[h];
    if (v == id) return ranks[h];
    if (v == -1) return -1;
  }
}

// Entries of a row before its first -1, at most limit (lanes read 32 at a time; the result is the same on all).
__device__ __forceinline__ int pruneRowSize(const int* src, int limit, int lane, int* copy) {
  for (int r0 = 0; r0 < limit; r0 += kWarpSize) {
    const int r = r0 + lane;
    const int id = r < limit ? __ldg(src + r) : -1;
    if (copy != nullptr && r < limit) copy[r] = id;
    const unsigned ended = __ballot_sync(kFullMask, r < limit && id < 0);
    if (ended != 0) return r0 + __ffs(ended) - 1;
  }
  return limit;
}

__device__ __forceinline__ void graphPrune(const GraphPruneParams& p) {
  extern __shared__ int pruneShared[];
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x & (kWarpSize - 1);
  const long long i = (long long)blockIdx.x * kPruneWarps + warp;
  if (i >= p.n) return;  // the whole warp (no block barriers follow)
  const int k = p.k;
  const int slots = pruneTableSlots(k);
  const int mask = slots - 1;
  int* row = pruneShared + warp * (2 * k + 2 * slots);
  int* detours = row + k;
  int* ids = detours + k;
  int* ranks = ids + slots;
  const int size = pruneRowSize(p.knn + i * k, k, lane, row);
  for (int h = lane; h < slots; h += kWarpSize) ids[h] = -1;
  for (int r = lane; r < size; r += kWarpSize) detours[r] = 0;
  __syncwarp();
  for (int r = lane; r < size; r += kWarpSize) {  // a k-NN row holds distinct ordinals
    const int id = row[r];
    int h = pruneSlot(id, mask);
    while (atomicCAS(&ids[h], -1, id) != -1) h = (h + 1) & mask;
    ranks[h] = r;
  }
  __syncwarp();
  // only vias at rank s < size - 1 can detour (r > s), and only through their first size - 1 entries (t < r)
  for (int s = 0; s < size - 1; ++s) {  // uniform
    const int* via = p.knn + (long long)row[s] * k;
    const int limit = size - 1;
    for (int t0 = 0; t0 < limit; t0 += kWarpSize) {  // uniform
      const int t = t0 + lane;
      const int id = t < limit ? __ldg(via + t) : -1;
      const unsigned ended = __ballot_sync(kFullMask, t < limit && id < 0);
      const int end = ended != 0 ? t0 + __ffs(ended) - 1 : limit;  // the via row's -1 padding counts no more
      if (t < end) {
        const int r = pruneRank(ids, ranks, mask, id);
        if (r > s && r > t) atomicAdd(&detours[r], 1);
      }
      if (ended != 0) break;  // uniform
    }
  }
  __syncwarp();
  const int kept = min(size, p.degree);
  int* dst = p.out + i * p.degree;
  for (int r = lane; r < size; r += kWarpSize) {
    const int key = detours[r] * 512 + r;
    int place = 0;
    for (int r2 = 0; r2 < size; ++r2) place += (detours[r2] * 512 + r2) < key;
    if (place < kept) dst[place] = row[r];
  }
  for (int e = kept + lane; e < p.degree; e += kWarpSize) dst[e] = -1;
}

// Step (4) of a graph build: one step of the entry points' farthest-first traversal (GraphBuilder.seeds, lucene-codec,
// without its triangle-inequality pruning, a host economy: every distance is computed here). The step's new entry
// point is the position the previous step chose (state[2]); every other unchosen point lowers its distance to the
// nearest entry point by its distance to the new one, a warp per point, and keys itself: that distance while fewer
// than seedCount are chosen, then its gap over its scale. The best key wins (ties: the lower position), first per
// block, then in the grid's last block to finish, which records the choice and whether the traversal goes on.
constexpr int kFarthestThreads = 256;  // FarthestFirst.THREADS
constexpr int kFarthestWarps = kFarthestThreads / kWarpSize;

// The distance between row x (global) and row y (any memory) as the graph build ranks it: squared L2 (metric 0) or
// minus the dot product (1: cosine of normalised rows); the warp's lanes split the dimensions, and every lane gets
// the same sum (a butterfly: each step adds the same two values on both lanes of a pair).
__device__ __forceinline__ float warpDistance(const float* x, const float* y, int dims, int metric, int lane) {
  float acc = 0.f;
  if (metric == 0) {
    for (int d = lane; d < dims; d += kWarpSize) {
      const float t = __ldg(x + d) - y[d];
      acc = fmaf(t, t, acc);
    }
  } else {
    for (int d = lane; d < dims; d += kWarpSize) acc = fmaf(__ldg(x + d), y[d], acc);
  }
  for (int o = kWarpSize / 2; o > 0; o >>= 1) acc += __shfl_xor_sync(kFullMask, acc, o);
  return metric == 0 ? acc : -acc;
}

// Whether (key a, position pa) beats (key b, position pb); position -1 is no candidate.
__device__ __forceinline__ bool farthestBetter(float a, long long pa, float b, long long pb) {
  if (pa < 0) return false;
  if (pb < 0) return true;
  return a > b || (a == b && pa < pb);
}

// The block's best (key, position) of its threads' (all threads take part); the result in every thread.
__device__ __forceinline__ void farthestBlockBest(float& key, long long& pos, float* keys, long long* positions) {
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x & (kWarpSize - 1);
  for (int o = kWarpSize / 2; o > 0; o >>= 1) {
    const float k2 = __shfl_xor_sync(kFullMask, key, o);
    const long long p2 = __shfl_xor_sync(kFullMask, pos, o);
    if (farthestBetter(k2, p2, key, pos)) {
      key = k2;
      pos = p2;
    }
  }
  if (lane == 0) {
    keys[warp] = key;
    positions[warp] = pos;
  }
  __syncthreads();
  key = keys[0];
  pos = positions[0];
  for (int w = 1; w < kFarthestWarps; ++w) {
    if (farthestBetter(keys[w], positions[w], key, pos)) {
      key = keys[w];
      pos = positions[w];
    }
  }
  __syncthreads();  // the shared slots may be reused
}

__device__ __forceinline__ void farthestStep(const FarthestStepParams& p) {
  extern __shared__ float farthestSeed[];
  __shared__ float keys[kFarthestWarps];
  __shared__ long long positions[kFarthestWarps];
  __shared__ bool lastBlock;
  volatile int* state = p.state;
  if (state[0] != 0) return;  // stopped: written by an earlier launch only, the same for every block
  const long long next = state[2];
  const int chosen = state[1] + 1;  // with this step's entry point
  const bool scaled = chosen >= p.seedCount;
  const int dims = p.dims;
  const float* seedRow = p.points + (long long)p.sample[next] * dims;
  for (int d = threadIdx.x; d < dims; d += kFarthestThreads) farthestSeed[d] = seedRow[d];
  __syncthreads();
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x & (kWarpSize - 1);
  float bestKey = 0.f;
  long long bestPos = -1;
  for (long long i = (long long)blockIdx.x * kFarthestWarps + warp; i < p.count;
       i += (long long)gridDim.x * kFarthestWarps) {  // uniform per warp
    const float r = p.nearest[i];
    if (i == next) {
      if (lane == 0) p.nearest[i] = -INFINITY;  // chosen: never again, even among duplicates
      continue;
    }
    if (r == -INFINITY) continue;  // chosen earlier
    const float distance = warpDistance(p.points + (long long)p.sample[i] * dims, farthestSeed, dims, p.metric, lane);
    const float lowered = fminf(r, distance);
    if (lane == 0 && lowered != r) p.nearest[i] = lowered;
    const float key = scaled ? (p.metric == 0 ? lowered : 1.f + lowered) / p.scale[i] : lowered;
    if (farthestBetter(key, i, bestKey, bestPos)) {
      bestKey = key;
      bestPos = i;
    }
  }
  farthestBlockBest(bestKey, bestPos, keys, positions);
  if (threadIdx.x == 0) {
    p.blockKeys[blockIdx.x] = bestKey;
    p.blockPositions[blockIdx.x] = (int)bestPos;
    __threadfence();
    lastBlock = atomicAdd(p.state + 3, 1) == (int)gridDim.x - 1;
  }
  __syncthreads();
  if (!lastBlock) return;
  __threadfence();
  bestKey = 0.f;
  bestPos = -1;
  const volatile float* blockKeys = p.blockKeys;
  const volatile int* blockPositions = p.blockPositions;
  for (int b = threadIdx.x; b < (int)gridDim.x; b += kFarthestThreads) {
    if (farthestBetter(blockKeys[b], blockPositions[b], bestKey, bestPos)) {
      bestKey = blockKeys[b];
      bestPos = blockPositions[b];
    }
  }
  farthestBlockBest(bestKey, bestPos, keys, positions);
  if (threadIdx.x == 0) {
    state[4 + chosen - 1] = (int)next;
    state[1] = chosen;
    // the host's loop condition: a candidate left, and fewer than seedCount chosen or, below the limit, the best
    // still uncovered (past seedCount the best was chosen by the scaled key)
    const bool goOn = bestPos >= 0 && (chosen < p.seedCount || (chosen < p.limit && bestKey > p.uncovered));
    state[2] = (int)bestPos;
    state[3] = 0;
    state[0] = goOn ? 0 : 1;
  }
}

// The entry points' scale (GraphBuilder.nearestGaps): each sample vector's smallest gap to a vector of its row of
// the graph, a warp per sample vector, the row's distances one after the other.
constexpr int kGapWarps = 8;  // FarthestFirst.GAP_WARPS

__device__ __forceinline__ void neighbourGaps(const NeighbourGapParams& p) {
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x & (kWarpSize - 1);
  const long long i = (long long)blockIdx.x * kGapWarps + warp;
  if (i >= p.count) return;  // the whole warp
  const long long u = p.sample[i];
  const float* x = p.points + u * p.dims;
  const int* row = p.adjacency + u * p.degree;
  float best = INFINITY;
  for (int e = 0; e < p.degree; ++e) {  // uniform
    const int v = __ldg(row + e);
    if (v < 0) break;
    const float distance = warpDistance(p.points + (long long)v * p.dims, x, p.dims, p.metric, lane);
    best = fminf(best, p.metric == 0 ? distance : 1.f + distance);
  }
  if (lane == 0) p.out[i] = best;
}

// Step (3) of a graph build: the reverse links (GraphPruner.addReverseLinks, lucene-codec, the same output). Each kept
// edge i -> j at place p of row i gives j the reverse candidate key p * n + i; a vector's row is the first half of its
// pruned edges, then the sources of its `degree` smallest keys in key order, then the rest of its pruned edges,
// without -1, itself or duplicates, to `degree`. Three launches: in-degrees (atomics), the keys into a compressed
// sparse row (atomic cursors: the order within a row depends on the threads, the selection by key does not), then a
// warp per row.
constexpr int kReverseWarps = 8;  // ReverseLinks.WARPS: rows per block of gv_reverse_rows

__device__ __forceinline__ void reverseCount(const ReverseLinksParams& p) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= p.n * p.degree) return;
  const int j = p.pruned[e];
  if (j >= 0) atomicAdd(p.cursor + j, 1);
}

__device__ __forceinline__ void reverseFill(const ReverseLinksParams& p) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= p.n * p.degree) return;
  const int j = p.pruned[e];
  if (j < 0) return;
  const int i = (int)(e / p.degree);
  const int place = (int)(e - (long long)i * p.degree);
  p.keys[atomicAdd(p.cursor + j, 1)] = place * (int)p.n + i;
}

// Appends id to the warp's row (size entries in dst, the same on every lane) unless it is -1, self or there already.
__device__ __forceinline__ int reverseAppend(int* dst, int size, int id, int self, int lane) {
  if (id < 0 || id == self) return size;
  bool there = false;
  for (int q = lane; q < size; q += kWarpSize) there |= dst[q] == id;
  if (__any_sync(kFullMask, there)) return size;
  if (lane == 0) dst[size] = id;
  __syncwarp();
  return size + 1;
}

__device__ __forceinline__ void reverseRows(const ReverseLinksParams& p) {
  extern __shared__ int reverseShared[];
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x & (kWarpSize - 1);
  const long long i = (long long)blockIdx.x * kReverseWarps + warp;
  if (i >= p.n) return;  // the whole warp (no block barriers follow)
  const int degree = p.degree;
  int* chosen = reverseShared + warp * 2 * degree;  // the row's smallest keys, ascending
  int* row = chosen + degree;                       // the row being assembled
  const int from = p.start[i];
  const int to = p.start[i + 1];
  // the smallest keys one after another: each the least key above the last (keys are distinct)
  int picked = 0;
  int last = -1;
  for (; picked < degree && picked < to - from; ++picked) {  // uniform
    int best = INT_MAX;
    for (int q = from + lane; q < to; q += kWarpSize) {
      const int key = p.keys[q];
      if (key > last && key < best) best = key;
    }
    for (int o = kWarpSize / 2; o > 0; o >>= 1) best = min(best, __shfl_xor_sync(kFullMask, best, o));
    if (lane == 0) chosen[picked] = best;
    last = best;
  }
  __syncwarp();
  const int* own = p.pruned + i * degree;
  const int self = (int)i;
  const int half = degree / 2;
  int size = 0;
  for (int q = 0; q < half; ++q) size = reverseAppend(row, size, own[q], self, lane);
  for (int q = 0; q < picked && size < degree; ++q) size = reverseAppend(row, size, chosen[q] % (int)p.n, self, lane);
  for (int q = half; q < degree && size < degree; ++q) size = reverseAppend(row, size, own[q], self, lane);
  int* dst = p.out + i * degree;
  for (int q = lane; q < degree; q += kWarpSize) dst[q] = q < size ? row[q] : -1;
}

}  // namespace gv

extern "C" __global__ void gv_reverse_count(gv::ReverseLinksParams p) { gv::reverseCount(p); }

extern "C" __global__ void gv_reverse_fill(gv::ReverseLinksParams p) { gv::reverseFill(p); }

extern "C" __global__ void __launch_bounds__(gv::kReverseWarps * gv::kWarpSize) gv_reverse_rows(gv::ReverseLinksParams p) {
  gv::reverseRows(p);
}

extern "C" __global__ void __launch_bounds__(gv::kGapWarps * gv::kWarpSize) gv_neighbour_gaps(gv::NeighbourGapParams p) {
  gv::neighbourGaps(p);
}

extern "C" __global__ void __launch_bounds__(gv::kPruneWarps * gv::kWarpSize) gv_graph_prune(gv::GraphPruneParams p) {
  gv::graphPrune(p);
}

extern "C" __global__ void __launch_bounds__(gv::kFarthestThreads) gv_farthest_step(gv::FarthestStepParams p) {
  gv::farthestStep(p);
}
