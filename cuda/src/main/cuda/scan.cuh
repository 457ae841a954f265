// The scan of the k-selection kernels (WarpSelect, BlockSelect): feeds one row chunk to a warp's
// WarpQueue (select.cuh) through a cp.async load ring and a warp-wide candidate buffer in shared
// memory, with the SelectParams epilogue (scale, norms, filter, clamp) applied on the way.
// Warp invariant as in select.cuh: every function here is called by all 32 lanes of the warp.
#pragma once
#include "select.cuh"

namespace gv {

// Value of column col with the epilogue of SelectParams applied to the raw input x; sets id.
__device__ __forceinline__ float epilogue(const SelectParams& p, float x, const int* idxRow, int row, int col,
                                          int& id) {
  const long long gid = idxRow != nullptr ? (long long)idxRow[col] : p.idxOffset + col;
  id = (int)gid;
  if (gid < 0) return GV_INF;
  // one accept mask per row (queries of a batch with their own filters) or one for all rows
  if (idxRow == nullptr && p.acceptBits != nullptr && !accepted(p.acceptBits + row * p.acceptRowWords, gid)) {
    return GV_INF;
  }
  float v = p.inScale * x;
  if (p.colNorms != nullptr) v += p.colNorms[gid];
  if (p.rowNorms != nullptr) v += p.rowNorms[row];
  if (p.clampZero) v = fmaxf(v, 0.0f);
  return v;
}

// Values each lane tests per tile: 16 for small queues, 8 for K >= 256 (register budget of the 32-
// and 64-register warp queues).
template <int K> struct ScanPerLane { static constexpr int value = K >= 256 ? 8 : 16; };

// Tiles of a warp's scan in flight at once (Stages - 1 ahead of the one being tested). The loads go
// global -> shared memory with cp.async (sm_80+), so the tiles ahead cost shared memory, not
// registers: Stages * S * 32 floats per warp (6 KB at 3 stages, S = 16). WarpSelect keeps 3;
// BlockSelect 2, so that 8 blocks of k <= 32 fit on an SM (the exact-search GEMM path launches one
// block per query: 1024 queries are one wave at 8 blocks per SM, two at 5).
// GV_SCAN_STAGES overrides both, for variant builds (cuda/bench/kselect-variants.sh) only.
#ifdef GV_SCAN_STAGES
constexpr int kWarpSelectStages = GV_SCAN_STAGES;
constexpr int kBlockSelectStages = GV_SCAN_STAGES;
#else
constexpr int kWarpSelectStages = 3;
constexpr int kBlockSelectStages = 2;
#endif

// Shared memory of one warp's scan: the load ring (Stages tiles of S / 4 float4 per lane) and the
// candidate buffer (pairs): two merges' worth (a tile whose candidates do not fit is appended in
// parts, with merges in between).
template <int K, int Stages>
struct ScanShared {
  static constexpr int S = ScanPerLane<K>::value;
  static constexpr int kMerge = pow2Ceil(Bucket<K>::T) * kWarpSize;  // pairs per merge (WarpQueue 32*P)
  static constexpr int kBuf = 2 * kMerge;
  float4 stage[Stages * (S / 4) * kWarpSize];
  float bk[kBuf];
  int bv[kBuf];
};

// Drops the buffered pairs that no longer beat kth (a merge lowered it), in place, keeping the
// others in order; returns how many remain. Pays for itself at the start of a chunk, where the
// buffer fills faster than the threshold falls and most of what waits is beaten by the first merges.
__device__ __forceinline__ int compactBelow(float* bk, int* bv, int n, float kth, int lane) {
  const unsigned lowerLanes = (1u << lane) - 1u;
  int out = 0;
  for (int base = 0; base < n; base += kWarpSize) {  // uniform
    const int e = base + lane;
    const float key = e < n ? bk[e] : GV_INF;
    const int id = e < n ? bv[e] : -1;
    const bool keep = key < kth;
    const unsigned b = __ballot_sync(kFullMask, keep);
    __syncwarp();  // this group of 32 is read before any of it is overwritten (targets are <= e)
    if (keep) {
      const int pos = out + __popc(b & lowerLanes);
      bk[pos] = key; bv[pos] = id;
    }
    out += __popc(b);
    __syncwarp();
  }
  return out;
}

// Bit u set: this lane's value u of the tile (in its scratch slots) is below kth. NaN and +inf never pass.
template <int J>
__device__ __forceinline__ unsigned candidateMask(const float4* mine, float kth) {
  unsigned m = 0;
#pragma unroll
  for (int j = 0; j < J; ++j) {
    const float4 a = mine[j * kWarpSize];
    m |= (a.x < kth ? 1u : 0u) << (4 * j) | (a.y < kth ? 1u : 0u) << (4 * j + 1) |
         (a.z < kth ? 1u : 0u) << (4 * j + 2) | (a.w < kth ? 1u : 0u) << (4 * j + 3);
  }
  return m;
}

// Feeds columns [begin, end) of one row to a warp queue. Each step the warp covers a tile of
// S * 32 * numWarps columns (S = scanPerLane). With a 16-byte aligned row and no input ids, lane l
// of warp w owns columns tile + j*4*stride + (w*32+l)*4 + [0,4) for j < S/4 and copies them with
// cp.async into its own slots of the warp's load ring, kScanStages - 1 tiles ahead of the tile it
// tests, so the loads stay in flight while the warp tests values and merges; a lane whose share of
// a tile runs past the end (the last tile) and rows that are not aligned or have input ids read S
// strided scalars instead. Each lane reads back only what it copied itself, so waiting for its own
// copy groups is enough (no warp barrier).
// The tile is tested against the threshold and skipped with one vote when no lane has a candidate
// (the common case once the queue is full). Otherwise the lanes write their (epilogued) values back
// to their slots of the ring (a scratch copy that a dynamic index can read: a register array cannot
// be indexed without going to local memory), and every lane appends its candidates to the warp's
// candidate buffer at its prefix-sum offset: one pass per tile, however the candidates are spread
// over the lanes. Buffered pairs are sorted and merged into the warp queue 32 * P at a time, from
// one call site (the merge network is large: one instantiation keeps code size and nvcc time down):
// whenever a full batch is buffered, and at the end. A tile with more candidates than the buffer
// has room for (the first tiles of a chunk pass entirely) is appended over several passes of the
// loop, with merges in between. After a merge the rest of the buffer and the tile are re-tested
// against the lowered threshold. The thread queues of WarpQueue stay unused here.
template <int K, int T, int Stages>
__device__ __forceinline__ void scanRow(WarpQueue<K, T>& q, const SelectParams& p, int row, int begin,
                                        int end, int warpIdx, int numWarps, ScanShared<K, Stages>& sh) {
  constexpr int S = ScanPerLane<K>::value;
  constexpr int J = S / 4;  // float4 per lane per tile
  constexpr int kMerge = ScanShared<K, Stages>::kMerge;
  constexpr int kBuf = ScanShared<K, Stages>::kBuf;
  constexpr int kScanStages = Stages;
  static_assert(kMerge == WarpQueue<K, T>::P * kWarpSize, "merge batch = the warp queue's sort width");
  const float* inRow = p.in + (long long)row * p.inRowStride;
  const int* idxRow = p.inIdx != nullptr ? p.inIdx + (long long)row * p.inRowStride : nullptr;
  const int stride = numWarps * kWarpSize;
  const int tileStep = S * stride;
  const bool vec = idxRow == nullptr && ((reinterpret_cast<uintptr_t>(inRow + begin) & 15) == 0);
  // plain: the value is inScale * x and the id idxOffset + col (no ids, filter, norms or clamp)
  const bool plain = idxRow == nullptr && p.acceptBits == nullptr && p.colNorms == nullptr &&
                     p.rowNorms == nullptr && !p.clampZero && p.idxOffset >= 0;
  const float inScale = p.inScale;
  // affine (the GEMM path of exact search): value = inScale * x + colNorms[id] + rowNorms[row], clamped
  // at 0 if asked; no input ids or filter, and the norms of the row's columns 16-byte aligned like the row
  const float* colNormsRow = p.colNorms != nullptr && p.idxOffset >= 0 ? p.colNorms + p.idxOffset : nullptr;
  const bool affine = idxRow == nullptr && p.acceptBits == nullptr && p.idxOffset >= 0 &&
                      (p.colNorms == nullptr || (reinterpret_cast<uintptr_t>(colNormsRow + begin) & 15) == 0);
  const float rowTerm = p.rowNorms != nullptr ? p.rowNorms[row] : 0.0f;
  const int t = warpIdx * kWarpSize + q.lane;
  // (vec) this lane's share of the tile at `tile` lies inside the row iff tile <= laneLimit, every
  // lane's iff tile <= warpLimit (lane 31 reaches furthest); no int overflow near INT_MAX
  const int laneLimit = end - ((J - 1) * 4 * stride + t * 4 + 4);
  const int warpLimit = end - ((J - 1) * 4 * stride + (warpIdx * kWarpSize + kWarpSize - 1) * 4 + 4);
  constexpr int kAhead = kScanStages - 1;  // tiles in flight ahead of the current one
  // column of this lane's value u in the tile at `tile`
  const auto colOf = [&](int tile, int u) {
    return vec ? tile + (u / 4) * 4 * stride + t * 4 + (u % 4) : tile + u * stride + t;
  };
  // copies this lane's share of the tile `ahead` tiles after `tile` into ring slot `slot`
  const auto issue = [&](int tile, int ahead, int slot) {
    if (tile <= laneLimit - ahead * tileStep) {
      const float* src = inRow + (long long)tile + (long long)ahead * tileStep + t * 4;
#pragma unroll
      for (int j = 0; j < J; ++j) copyAsync16(sh.stage + (slot * J + j) * kWarpSize + q.lane, src + j * 4 * stride);
    }
    commitAsync();  // every lane commits every step (possibly an empty group): the counts stay aligned
  };
  if (vec) {
#pragma unroll
    for (int s = 0; s < kAhead; ++s) issue(begin, s, s);
  }
  int n = 0;             // pairs in the candidate buffer (warp-uniform)
  int slot = 0;          // ring slot of the next tile
  int cur = 0;           // ring slot of the current tile
  unsigned m = 0;        // this lane's candidates of the current tile not yet appended
  bool resume = false;   // (uniform) the current tile's candidates did not all fit: merge, append the rest
  for (int tile = begin;;) {  // uniform across the block
    const bool done = tile >= end;
    if (!resume) {
      cur = slot;
      m = 0;
    }
    float4* mine = sh.stage + cur * J * kWarpSize + q.lane;  // this lane's slots of the current tile
    if (!done && !resume) {
      float v[S];
      if (vec) {
        // the slot refilled here was read in the previous step
        issue(tile, kAhead, slot == 0 ? kScanStages - 1 : slot - 1);
        waitAsync<kAhead>();
      }
      if (vec && plain && tile <= warpLimit) {
        // fast path (almost every tile): the whole tile is in the ring and needs only the scale
#pragma unroll
        for (int j = 0; j < J; ++j) {
          const float4 a = mine[j * kWarpSize];
          v[4 * j] = inScale * a.x; v[4 * j + 1] = inScale * a.y; v[4 * j + 2] = inScale * a.z; v[4 * j + 3] = inScale * a.w;
        }
      } else if (vec && affine && tile <= warpLimit) {
        // fast path of the GEMM epilogue: column norms as float4 (L2-resident: every row reads them),
        // the same operations in the same order as epilogue()
#pragma unroll
        for (int j = 0; j < J; ++j) {
          const float4 a = mine[j * kWarpSize];
          const float4 c = colNormsRow != nullptr
              ? __ldg(reinterpret_cast<const float4*>(colNormsRow + tile + j * 4 * stride + t * 4))
              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          v[4 * j] = inScale * a.x + c.x + rowTerm; v[4 * j + 1] = inScale * a.y + c.y + rowTerm;
          v[4 * j + 2] = inScale * a.z + c.z + rowTerm; v[4 * j + 3] = inScale * a.w + c.w + rowTerm;
        }
        if (p.clampZero) {
#pragma unroll
          for (int u = 0; u < S; ++u) v[u] = fmaxf(v[u], 0.0f);
        }
      } else {
        const bool full = vec && tile <= laneLimit;
        if (full) {
#pragma unroll
          for (int j = 0; j < J; ++j) {
            const float4 a = mine[j * kWarpSize];
            v[4 * j] = a.x; v[4 * j + 1] = a.y; v[4 * j + 2] = a.z; v[4 * j + 3] = a.w;
          }
        } else {
#pragma unroll
          for (int u = 0; u < S; ++u) {
            const int col = colOf(tile, u);
            v[u] = col < end ? inRow[col] : 0.0f;
          }
        }
        // epilogue, only inside the row (it reads ids, filter bits and norms by column); columns past
        // the end become +inf AFTER the scale (inScale = -1 must not make -inf)
#pragma unroll
        for (int u = 0; u < S; ++u) {
          const int col = colOf(tile, u);
          int id;
          if (full || col < end) {
            v[u] = plain ? inScale * v[u] : epilogue(p, v[u], idxRow, row, col, id);
          } else {
            v[u] = GV_INF;
          }
        }
      }
      if (vec) slot = slot == kScanStages - 1 ? 0 : slot + 1;
      q.refreshThreshold();
      // reject the tile with one vote when no lane holds a value below kth (fminf skips NaN; NaN and
      // +inf never pass)
      float lo = v[0];
#pragma unroll
      for (int u = 1; u < S; ++u) lo = fminf(lo, v[u]);
      if (__any_sync(kFullMask, lo < q.kth)) {
#pragma unroll
        for (int u = 0; u < S; ++u) m |= (v[u] < q.kth ? 1u : 0u) << u;
        // keep the values where a dynamic index can reach them (the slot is not refilled before the
        // next tile)
#pragma unroll
        for (int j = 0; j < J; ++j) mine[j * kWarpSize] = make_float4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
      }
    }
    int off = 0;
    int total = __any_sync(kFullMask, m != 0) ? warpExclusiveSum(__popc(m), q.lane, off) : 0;
    bool merged = false;
    while (n >= kMerge || (done && n > 0)) {
      const int cnt = n < kMerge ? n : kMerge;
      q.mergeBuffer(sh.bk + n - cnt, sh.bv + n - cnt, cnt);  // ends with __syncwarp
      n -= cnt;
      merged = true;
      if (n > 0) n = compactBelow(sh.bk, sh.bv, n, q.kth, q.lane);
    }
    if (done) break;
    if (merged && total > 0) {  // the threshold dropped: re-test what is left of the tile
      m &= candidateMask<J>(mine, q.kth);
      total = __any_sync(kFullMask, m != 0) ? warpExclusiveSum(__popc(m), q.lane, off) : 0;
    }
    if (total > 0) {
      const float* vals = reinterpret_cast<const float*>(mine);
      int pos = n + off;
      while (m != 0 && pos < kBuf) {  // what does not fit stays in m for the next pass
        const int u = __ffs(m) - 1;
        m &= m - 1;
        const int col = colOf(tile, u);
        sh.bk[pos] = vals[(u / 4) * 4 * kWarpSize + (u % 4)];
        sh.bv[pos] = idxRow != nullptr ? idxRow[col] : (int)(p.idxOffset + col);
        ++pos;
      }
      n = n + total < kBuf ? n + total : kBuf;
      __syncwarp();  // the buffer is read by all lanes at the next merge
    }
    resume = __any_sync(kFullMask, m != 0);  // only when the buffer is full, so the next pass merges
    if (!resume) tile = end - tile > tileStep ? tile + tileStep : end;  // no int overflow near INT_MAX
  }
  if (vec) waitAsync<0>();  // no copy may still target the ring when the caller reuses the memory
}

}  // namespace gv
