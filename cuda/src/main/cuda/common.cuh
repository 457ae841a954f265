// gpu-vectors CUDA kernels: shared definitions.
// All kernels select the SMALLEST values; "largest" is done at run time by multiplying the input by
// inScale = -1 and the output by outScale = -1 (exact in float, NaN stays NaN).
#pragma once
#include <cstdint>

namespace gv {

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;
// Sentinel of an empty slot: value +inf, index -1. NaN and +inf (after inScale) are never selected.
#define GV_INF __int_as_float(0x7f800000)
__device__ __forceinline__ float sentinel() { return GV_INF; }

// Parameter block shared by every selection kernel (WarpSelect, BlockSelect, Tang) and by the
// fused exact-search kernel. The Java side (SelectParams.java) writes exactly this layout:
// 8-byte fields first, then 4-byte fields; 120 bytes, little-endian.
struct SelectParams {
  const float* in;              // row-major input values (or inner products for the GEMM path)
  const int* inIdx;             // optional: ids of the input values (merge passes); else id = idxOffset + col
  const float* colNorms;        // optional: added per id (||x||^2 of the L2 GEMM path)
  const float* rowNorms;        // optional: added per row (||q||^2 of the L2 GEMM path)
  const unsigned long long* acceptBits;  // optional: bit id set = id may be selected
  float* outK;                  // per virtual row: k values, best first
  int* outIdx;                  // per virtual row: k ids (-1 = empty)
  const int* rowLens;           // optional, the radix selection only: columns of each row (at most len); else len
  long long inRowStride;        // elements between input rows
  long long idxOffset;          // id of column 0 when inIdx == null
  long long outRowStride;       // elements between output rows (each row holds chunksPerRow * k)
  long long acceptRowWords;     // 64-bit words between the accept masks of consecutive rows (0: one mask for all)
  int rows;                     // input rows
  int len;                      // input columns per row
  int k;                        // values wanted per (row, chunk), 1..2048
  int chunksPerRow;             // hierarchical partition: each row is split into this many chunks
  int chunkLen;                 // columns per chunk (last chunk may be shorter)
  float inScale;                // value = inScale * in + colNorms[id] + rowNorms[row]
  float outScale;               // stored value = outScale * selected value
  int clampZero;                // 1: clamp value at 0 before selection (squared L2 from GEMM)
};
static_assert(sizeof(SelectParams) == 128, "SelectParams layout is shared with Java");

// Parameters of the fused distance + select kernel (GpuFlatIndex.launchFused writes this layout, 80 bytes).
struct FusedParams {
  const float* vectors;         // n x dims row-major
  const float* queries;         // numQueries x dims row-major
  const unsigned long long* acceptBits;  // optional
  float* outK;                  // numQueries x (chunks * k)
  int* outIdx;
  long long n;                  // vectors
  long long outRowStride;
  int dims;
  int numQueries;
  int k;
  int chunks;                   // vectors are split into this many chunks (grid.y)
  int chunkLen;
  int metric;                   // 0 = squared L2, 1 = inner product (selected largest)
};
static_assert(sizeof(FusedParams) == 80, "FusedParams layout is shared with Java");

// Parameters of the small-batch exact scan (flat_scan.cu; FlatScanParams.java writes this layout, 96 bytes): block
// (group, chunk) = (blockIdx.x, blockIdx.y) scores the rows [chunk * chunkLen, (chunk + 1) * chunkLen) against the
// queries [group * kFlatScanQueries, ...) and writes each query's k best at outK / outIdx + query * outRowStride +
// chunk * k. Keys as the GEMM path's: max(0, ||x||^2 - 2 x.q + ||q||^2), or -x.q (selected largest).
struct FlatScanParams {
  const float* vectors;         // n x dims row-major (normalised for cosine)
  const float* norms;           // n: ||x||^2 per row (L2); null for inner product and cosine
  const float* queries;         // numQueries x dims row-major (normalised for cosine)
  const unsigned long long* acceptBits;  // optional: bit id set = row id may be returned
  float* outK;                  // numQueries x (chunks * k): distances (L2) or inner products, best first
  int* outIdx;                  // numQueries x (chunks * k): row ids (-1 = empty)
  long long n;                  // rows
  long long acceptRowWords;     // 64-bit words between the accept masks of consecutive queries (0: one mask)
  long long outRowStride;       // elements between output rows (chunks * k)
  int dims;
  int numQueries;
  int k;                        // pairs written per (query, chunk), 1..256
  int chunks;                   // grid.y
  int chunkLen;                 // rows per chunk (the last may be shorter)
  int metric;                   // 0 = squared L2, 1 = inner product (selected largest)
};
static_assert(sizeof(FlatScanParams) == 96, "FlatScanParams layout is shared with Java");

// Parameters of the half-precision candidate scan (flat_half_scan.cu; HalfScanParams.java writes this layout, 104
// bytes): as FlatScanParams over the index's FP16 copy, writing keys (smaller = better) for the FP32 re-rank.
struct HalfScanParams {
  const unsigned short* vectors;  // n x dimsPad FP16 (IEEE binary16 bits): row x times vectorScale, zero-padded
  const float* norms;           // n: ||x||^2 per row of the FP32 vectors (L2); null for inner product and cosine
  const float* queries;         // numQueries x dims FP32 row-major (normalised for cosine)
  const unsigned long long* acceptBits;  // optional: bit id set = row id may be returned
  float* outK;                  // numQueries x (chunks * k): keys (squared L2, or -x.q), ascending
  int* outIdx;                  // numQueries x (chunks * k): row ids (-1 = empty)
  long long n;                  // rows
  long long acceptRowWords;     // 64-bit words between the accept masks of consecutive queries (0: one mask)
  long long outRowStride;       // elements between output rows (chunks * k)
  int dims;
  int dimsPad;                  // dims rounded up to kHalfScanDimStep: the FP16 rows' pitch
  int numQueries;
  int k;                        // pairs written per (query, chunk): the candidates k'
  int chunks;                   // grid.y
  int chunkLen;                 // rows per chunk (the last may be shorter), a multiple of kHalfScanRows
  int metric;                   // 0 = squared L2, 1 = inner product (key -x.q)
  float vectorUnscale;          // 1 / vectorScale (a power of two)
};
static_assert(sizeof(HalfScanParams) == 104, "HalfScanParams layout is shared with Java");

// Parameters of the exact scan of byte, bit and bfloat16 rows (element_scan.cu; ElementScanParams.java writes this
// layout, 120 bytes): block (query, chunk) = (blockIdx.x, blockIdx.y) scores the rows [chunk * chunkLen, (chunk + 1) *
// chunkLen) against query blockIdx.x and writes its k best at outK / outIdx + query * outRowStride + chunk * k.
// Queries come as floats, one a stored value (byte, bit: each stored byte as a float, exact; bfloat16: the query's
// floats); the block packs its query like the rows. Keys smaller = better: squared L2 (bit: Hamming distance, the
// squared L2 of 0/1 vectors), -x.q, -cos(x, q); written as distances, inner products or cosines (outScale -1).
// With bestK (the tie scan): the rows whose key equals the k-th of the search's results (bestK / bestIdx, rows
// bestRowStride apart) are selected by id instead, the k lowest ids of each chunk at outK / outIdx; the splice then
// puts the lowest of them in the results' tied slots (Lucene keeps the lowest doc ids among equal scores).
struct ElementScanParams {
  const unsigned* vectors;      // n rows of rowWords 32-bit words (byte, bit: 4 values a word; bf16: 2), zero-padded
  const float* queries;         // numQueries x dims floats, row-major
  const unsigned long long* acceptBits;  // optional: bit id set = row id may be returned
  float* outK;                  // numQueries x (chunks * k): distances (L2), inner products or cosines, best first
  int* outIdx;                  // numQueries x (chunks * k): row ids (-1 = empty)
  long long n;                  // rows
  long long acceptRowWords;     // 64-bit words between the accept masks of consecutive queries (0: one mask)
  long long outRowStride;       // elements between output rows (chunks * k)
  float* bestK;                 // the tie scan and splice: the search's results, k distances a query, best first
  int* bestIdx;                 // their ids (-1 = empty)
  long long bestRowStride;      // elements between their rows
  int dims;                     // values a row and floats a query (bit: bytes a row)
  int rowWords;                 // 32-bit words a row: the rows' pitch
  int numQueries;
  int k;                        // pairs written per (query, chunk), 1..2048
  int chunks;                   // grid.y
  int chunkLen;                 // rows per chunk (the last may be shorter)
  int metric;                   // 0 = squared L2 (bit: Hamming), 1 = inner product, 2 = cosine (both selected largest)
  int pad;                      // to the struct's 8-byte alignment
};
static_assert(sizeof(ElementScanParams) == 120, "ElementScanParams layout is shared with Java");

// Parameters of the IVF-Flat list scan (IvfScanParams.java writes this layout, 96 bytes). Block
// (query, probe) scans list probes[query * nprobe + probe] and writes its k best at
// outK / outIdx + query * outRowStride + probe * k; ids are vector ordinals.
struct IvfScanParams {
  const float* vectors;         // n x dims row-major in list order: position p holds vector ords[p]
  const int* ords;              // n: the ordinal of the vector at each position
  const int* listOffsets;       // nlist + 1: list l holds positions [listOffsets[l], listOffsets[l + 1])
  const float* queries;         // numQueries x dims row-major (normalised for cosine)
  const int* probes;            // numQueries x nprobe: the lists each query scans (-1: none, e.g. a NaN query)
  const unsigned long long* acceptBits;  // optional: bit ord set = vector ord may be returned
  float* outK;                  // numQueries x (nprobe * k) distances
  int* outIdx;                  // numQueries x (nprobe * k) ordinals (-1 = empty)
  long long acceptRowWords;     // 64-bit words between the accept masks of consecutive queries (0: one mask)
  long long outRowStride;       // elements between output rows (nprobe * k)
  int dims;
  int k;                        // pairs written per (query, probe), 1..2048
  int nprobe;                   // lists scanned per query (grid.y)
  int metric;                   // 0 = squared L2, 1 = inner product (selected largest)
};
static_assert(sizeof(IvfScanParams) == 96, "IvfScanParams layout is shared with Java");

// Parameters of the IVF-PQ kernels (IvfPqScanParams.java writes this layout, 144 bytes).
// ivf_pq.cu, the full-table scan: block (query, probe) builds the query's lookup table for list
// probes[query * nprobe + probe] (L2: of the residual query - centroid; inner product: of the query, plus
// <query, centroid> per list), scans the list's codes and writes its k best (approximate distance or score,
// ordinal) at outK / outIdx + query * outRowStride + probe * k.
// ivf_pq_tables.cu, the precomputed-table scan: codeTerms (per vector, at upload), tables (per query, per
// search), then block (query, probe group of probesPerBlock) writes its k best at outK / outIdx +
// query * outRowStride + blockIdx.y * k.
struct IvfPqScanParams {
  const unsigned char* codes;   // n codes in list order, interleaved (pqCodeChunk below; GpuIvfPqIndex.interleave)
  const int* ords;              // n: the ordinal of the vector at each position
  const int* listOffsets;       // nlist + 1
  const float* queries;         // numQueries x dims row-major (normalised for cosine)
  const float* centroids;       // nlist x dims row-major (the coarse index's)
  const float* codebooks;       // m x 2^bits x (dims / m): codeword c of sub-quantizer j at ((j << bits) + c) * (dims / m)
  const int* probes;            // numQueries x nprobe: the lists each query scans (-1: none)
  const unsigned long long* acceptBits;  // optional: bit ord set = vector ord may be returned
  float* tables;                // full-table scan: null = the lookup table in dynamic shared memory, else numQueries x
                                // nprobe tables of m << bits floats in global memory (pair query * nprobe + probe);
                                // precomputed-table scan: numQueries tables of m << bits floats (term 3 per query)
  float* codeTerms;             // precomputed-table scan, L2: n floats, ||r||^2 + 2 <c, r> per position (else null)
  float* outK;                  // numQueries x (nprobe * k)
  int* outIdx;                  // numQueries x (nprobe * k) ordinals (-1 = empty)
  long long acceptRowWords;     // 64-bit words between the accept masks of consecutive queries (0: one mask)
  long long outRowStride;       // elements between output rows (nprobe * k)
  int* rowLengths;              // gv_ivf_pq_table_keys: per query the keys appended to its row (zeroed by the host)
  int dims;
  int k;                        // pairs written per (query, probe), 1..2048
  int nprobe;                   // lists scanned per query (grid.y)
  int metric;                   // 0 = squared L2 (residual table), 1 = inner product (selected largest)
  int m;                        // sub-quantizers: code bytes per vector; divides dims
  int bits;                     // bits per sub-code, 1..8: 2^bits codewords per sub-quantizer
  int probesPerBlock;           // precomputed-table scan: probes per block (grid.y = ceil(nprobe / probesPerBlock))
  int numQueries;               // precomputed-table kernels: queries of the block of queries (rows of tables)
};
static_assert(sizeof(IvfPqScanParams) == 152, "IvfPqScanParams layout is shared with Java");

// The device layout of IVF-PQ codes, interleaved for the list scans: a code's m bytes are split into chunks of 16
// (sub-codes 16 c .. 16 c + 15, the last chunk zero-padded), and the chunks of 32 consecutive positions are stored
// chunk by chunk: chunk c of position v is the uint4 at (((v / 32) * chunks + c) * 32 + v % 32). The 32 lanes of a
// warp that score 32 consecutive positions then read each chunk as 512 contiguous bytes, where position-major codes
// (96 bytes apart at 768 dimensions) made every 4-byte load touch 24-32 cache lines; the layout of Faiss's and
// cuVS's interleaved IVF-PQ lists. GpuIvfPqIndex.interleave writes it (the persisted codes stay position-major).
constexpr int kPqCodeGroup = 32;       // positions per interleaved group (the shifts below: 2^5)
constexpr int kPqCodeChunkBytes = 16;  // code bytes per chunk
__device__ __forceinline__ int pqCodeChunks(int m) { return (m + kPqCodeChunkBytes - 1) / kPqCodeChunkBytes; }
__device__ __forceinline__ const uint4* pqCodeChunk(const unsigned char* codes, long long v, int chunks, int c) {
  // v >= 0: shifts rather than signed division
  return reinterpret_cast<const uint4*>(codes) + (((v >> 5) * chunks + c) << 5) + (v & (kPqCodeGroup - 1));
}
// Sub-code j of position v.
__device__ __forceinline__ unsigned pqCodeByte(const unsigned char* codes, long long v, int chunks, int j) {
  return reinterpret_cast<const unsigned char*>(pqCodeChunk(codes, v, chunks, j / kPqCodeChunkBytes))
      [j % kPqCodeChunkBytes];
}

// The grouped IVF-Flat scan (ivf_grouped.cu), for batches in which many queries probe each list: the
// (query, probe) pairs of a search, counting-sorted by list on the device, then one block per tile of
// up to kIvfTileQueries pairs of one list, which reads the list's vectors once for all of them. Its
// kernels take this block with the search's IvfScanParams (IvfGroupParams.java writes this layout,
// 48 bytes). A pair's id is query * nprobe + probe.
struct IvfGroupParams {
  int* counts;                  // nlist: pairs per list (zeroed by the host, counted on the device)
  int* ranks;                   // numQueries x nprobe: each pair's place among its list's pairs
  int* pairs;                   // numQueries x nprobe: pair ids, list by list
  int* pairOffsets;             // nlist + 1: list l's pairs are pairs[pairOffsets[l] .. pairOffsets[l + 1])
  int* tileOffsets;             // nlist + 1: list l's tiles are blocks [tileOffsets[l], tileOffsets[l + 1])
  int numQueries;
  int nlist;
};
static_assert(sizeof(IvfGroupParams) == 48, "IvfGroupParams layout is shared with Java");
// Pairs per tile, threads per block and dynamic shared memory of the grouped scan kernel;
// IvfGroupParams.java holds the same numbers (checked by ParamLayoutTest).
constexpr int kIvfTileQueries = 32;
constexpr int kIvfGroupedThreads = 512;
constexpr int kIvfGroupedSharedBytes = 46080;

// Parameters of the exact re-rank of the TF32 candidate pass (rerank_kernels.cu; RerankParams.java writes this
// layout, 80 bytes). Keys: smaller = better (squared L2, or -x.q for inner product / cosine).
struct RerankParams {
  const float* vectors;         // n x dims row-major (the index's vectors, normalised for cosine)
  const float* queries;         // numQueries x dims row-major
  const int* candIdx;           // numQueries x candidates: the TF32 pass's ids, best first (-1 = empty); or null:
                                // candidate c is vector c (every vector's key, GpuFlatIndex.enqueueSmall)
  const float* candKeys;        // numQueries x candidates: their TF32 keys, ascending (+inf = empty)
  float* exactKeys;             // numQueries x candidates: the candidates' FP32 keys (+inf for empty slots)
  float* stats;                 // numQueries x 4: k-th exact key, last candidate's TF32 key, ||q||^2 rounded up,
                                // the least of the chunks' last keys (+inf without chunkKeys); or null: not written
  float* outK;                  // the final k values per query (row q at outK + q * k): read by gv_rerank_stats,
                                // written by the re-rank itself when rowsDone is given
  int* outIdx;                  // with rowsDone: the final k ids per query (row q at outIdx + q * k)
  int* rowsDone;                // optional, zeroed: per query its blocks done; the last one selects the k best
  const float* chunkKeys;       // optional: the candidate pass's keys by chunk before their merge (row q at
                                // chunkKeys + q * chunkRowStride, chunk c's chunkK keys ascending from c * chunkK):
                                // a chunk that kept fewer than k' candidates bounds the certificate by its last key
  long long chunkRowStride;
  int dims;
  int numQueries;
  int candidates;               // k': candidates per query
  int k;
  int metric;                   // 0 = squared L2, 1 = inner product (key -x.q)
  float outScale;               // outK holds outScale * key (-1 for inner product)
  int chunkK;                   // with chunkKeys (one index's rows): keys a chunk kept
  int chunks;                   // with chunkKeys (one index's rows): chunks of a row
};
static_assert(sizeof(RerankParams) == 120, "RerankParams layout is shared with Java");

// Parameters of the graph (CAGRA / SONG style) beam search (graph_search.cu; GraphSearchParams.java writes this
// layout, 120 bytes). One block per query; the block's dynamic shared memory holds the query, the internal list,
// the accepted list, the candidate buffers and the visited set (graphSharedWords in graph_search.cu, and
// GpuGraphIndex.sharedBytes, compute its size). Keys: smaller = better (squared L2, or -x.q).
struct GraphSearchParams {
  const float* vectors;         // n x dims row-major (normalised for cosine)
  const int* graph;             // n x degree: row i = the out-neighbours of ordinal i (-1 = none)
  const int* seeds;             // numSeeds entry points (ordinals)
  const float* queries;         // numQueries x dims row-major (normalised for cosine)
  const unsigned long long* acceptBits;  // optional: bit ord set = ord may be returned (all are traversed)
  float* outK;                  // numQueries x k: distances (L2) or inner products, best first
  int* outIdx;                  // numQueries x k: ordinals (-1 = empty)
  long long acceptRowWords;     // 64-bit words between the accept masks of consecutive queries (0: one mask)
  int numQueries;
  int n;
  int dims;
  int degree;
  int numSeeds;
  int k;                        // results per query, <= width
  int width;                    // M: size of the internal sorted list of the best visited nodes
  int batch;                    // candidate slots per iteration: a power of two >= parents * degree, >= 32
  int parents;                  // nodes expanded per iteration (the best not yet expanded), 1..32
  int teamSize;                 // threads that compute one distance together: a power of two, 1..32
  int hashWords;                // 32-bit words of the visited set, a Bloom filter (a power of two)
  int metric;                   // 0 = squared L2, 1 = inner product (selected largest)
  int maxIterations;            // safety net: iterations (expansion rounds) at most
  int pad;                      // to the struct's 8-byte alignment
};
static_assert(sizeof(GraphSearchParams) == 120, "GraphSearchParams layout is shared with Java");

// Several graph searches in one launch (gv_graph_search_table): the kernel parameter holds the entries themselves
// (8 + 32 x 120 = 3,848 bytes, inside the 4 KB parameter limit of every CUDA 12+ target).
constexpr int kGraphTableEntries = 32;
struct GraphSearchTable {
  int entries;  // entries used, 1..kGraphTableEntries
  int pad;
  GraphSearchParams entry[kGraphTableEntries];
};
static_assert(sizeof(GraphSearchTable) == 8 + kGraphTableEntries * 120, "GraphSearchTable layout is shared with Java");

// The by-value argument of a table launch over several indexes (ParamTable.java writes it): one parameter block per
// index, block z of the grid taking entry z.
template <typename P, int N>
struct ParamTable {
  int entries;  // entries used, 1..N
  int pad;
  P entry[N];
};
// This block's entry (blockIdx.z), or null past the entries used (the grid covers the largest launch's z).
template <typename P, int N>
__device__ __forceinline__ const P* blockEntry(const ParamTable<P, N>& t) {
  return (int)blockIdx.z < t.entries ? &t.entry[blockIdx.z] : nullptr;
}

__device__ __forceinline__ bool accepted(const unsigned long long* bits, long long id) {
  return bits == nullptr || ((bits[id >> 6] >> (id & 63)) & 1ull);
}

// cp.async (Ampere+): 16 bytes global -> shared, cached in L2 only (the input is read once).
__device__ __forceinline__ void copyAsync16(float4* smem, const float* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
// cp.async of one float, for rows that are not 16-byte aligned (.ca: 4-byte copies have no .cg form).
__device__ __forceinline__ void copyAsync4(float* smem, const float* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void commitAsync() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void waitAsync() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// gv_graph_prune (graph_build.cu; GraphPruneParams.java mirrors this layout, 32 bytes): CAGRA's rank-based pruning
// of a k-NN graph, one warp per row; the same output as the host's GraphPruner.prune.
struct GraphPruneParams {
  const int* knn;   // n x k ordinals, each row nearest first, -1 padding at its end
  int* out;         // n x degree: each row's kept edges, fewest detours first (ties: lower rank), -1 padding
  long long n;
  int k;            // <= 256 (detour keys: detours * 512 + rank)
  int degree;       // 1 <= degree <= k
};

// gv_farthest_step (graph_build.cu; FarthestStepParams.java mirrors this layout, 88 bytes): one step of a graph's
// entry points, the farthest-first traversal over a sample of its vectors (GraphBuilder.seeds in lucene-codec has the
// rule); the traversal's state lives on the device, so the host enqueues many steps between two waits.
struct FarthestStepParams {
  const float* points;   // the vectors, row-major, dims floats each (cosine: normalised)
  const int* sample;     // count: the sample's vectors (rows of points)
  float* nearest;        // count: distance to the nearest chosen point (+inf before any; -inf once chosen itself)
  const float* scale;    // count: each point's gap scale (past seedCount the key is gap(nearest) / scale)
  int* state;            // [0] stopped, [1] chosen so far, [2] position of the next choice, [3] blocks done,
                         // [4 + t] the t-th chosen position
  float* blockKeys;      // gridDim.x: each block's best key
  int* blockPositions;   // gridDim.x: each block's best position (-1: none)
  long long count;
  int dims;
  int metric;            // 0: squared L2; 1: cosine (minus the dot product of normalised rows; gap = 1 + distance)
  int seedCount;         // choices by distance while fewer than this are chosen, then by the scaled key
  int limit;             // at most this many chosen
  float uncovered;       // past seedCount, the traversal goes on while the best scaled key exceeds this
  int pad;
};

// gv_neighbour_gaps (graph_build.cu; NeighbourGapParams.java mirrors this layout, 56 bytes): each sample vector's
// gap to its nearest neighbour in the graph (the entry points' scale, GraphBuilder.nearestGaps in lucene-codec).
struct NeighbourGapParams {
  const float* points;    // the vectors, row-major, dims floats each (cosine: normalised)
  const int* sample;      // count: the sample's vectors
  const int* adjacency;   // vectors x degree ordinals, each row ending at its first -1
  float* out;             // count: the smallest gap (squared L2, or 1 - cosine) over the row; +inf without edges
  long long count;
  int dims;
  int degree;
  int metric;             // 0: squared L2; 1: cosine
  int pad;
};

// gv_reverse_count / gv_reverse_fill / gv_reverse_rows (graph_build.cu; ReverseLinksParams.java mirrors this layout,
// 56 bytes): step (3) of a graph build, the reverse links (GraphPruner.addReverseLinks in lucene-codec has the rule):
// the reverse edges of each vector as a compressed sparse row, then each row's result.
struct ReverseLinksParams {
  const int* pruned;  // n x degree: the pruned graph, each row ending at its first -1
  const int* start;   // n + 1: where each vector's reverse edges start in keys (exclusive prefix sums of the counts)
  int* cursor;        // n: gv_reverse_count's in-degrees; gv_reverse_fill's next free slot per vector
  int* keys;          // start[n]: vector j's reverse edges i -> j as keys p * n + i (p: j's place in row i)
  int* out;           // n x degree: first half of the row's pruned edges, its reverse edges by key, the rest
  long long n;
  int degree;         // n * degree < 2^31 (the keys are ints)
  int pad;
};

// gv_codebook_assign (kmeans.cu; CodebookAssignParams.java mirrors this layout, 48 bytes): the nearest
// codeword (squared L2) of every sub-vector of every point, for k-means of product-quantizer codebooks and PQ
// encoding; the sub-vector of group g of a point is its floats [g * subDims, (g + 1) * subDims).
struct CodebookAssignParams {
  const float* points;     // count x dims, row-major (dims = groups * subDims)
  const float* codebooks;  // groups x k x subDims: codeword c of group g at (g * k + c) * subDims
  int* out;                // count x groups: out[i * groups + g] = the nearest codeword (ties: the lower index)
  long long count;
  int dims;                // floats between consecutive points (groups * subDims)
  int groups;
  int subDims;
  int k;                   // codewords per group
};

// gv_centroid_sums / gv_centroid_means (kmeans.cu; CentroidMeansParams.java mirrors this layout, 64 bytes): the
// update step of k-means on the device, the points and their assignment already there. Sums are fixed point, each
// float times 2^scaleLog2 rounded to a 64-bit integer: integer adds give the same sums in any order, so the means do
// not depend on the order in which atomics land (float atomics would).
struct CentroidMeansParams {
  const float* points;            // count x (groups * subDims), row-major
  const int* assignment;          // count x groups: each sub-vector's centroid
  unsigned long long* sums;       // groups x k x subDims, two's complement fixed point; zeroed before the sums
  int* counts;                    // groups x k; zeroed before the sums
  float* means;                   // groups x k x subDims: sum / count, 0 where count is 0
  long long count;
  int groups;
  int subDims;
  int k;
  int scaleLog2;                  // every |float| * 2^scaleLog2 * count < 2^62
};

// Exclusive prefix sum of c over the warp's lanes; returns the warp total (all lanes).
template <typename T>
__device__ __forceinline__ T warpExclusiveSum(T c, int lane, T& exclusive) {
  T incl = c;
#pragma unroll
  for (int o = 1; o < kWarpSize; o <<= 1) {
    const T y = __shfl_up_sync(kFullMask, incl, o);
    if (lane >= o) incl += y;
  }
  exclusive = incl - c;
  return __shfl_sync(kFullMask, incl, kWarpSize - 1);
}

// float -> unsigned with the same order (negative values bit-inverted, positive ones with the sign bit set), and back.
__device__ __forceinline__ unsigned radixKey(float v) {
  const unsigned u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float radixValue(unsigned key) {
  return __uint_as_float((key & 0x80000000u) ? (key ^ 0x80000000u) : ~key);
}

// The final order of a selection's few pairs without sorting them: `keys` holds `count` distinct-enough 64-bit sort
// keys in shared memory (radixKey(value) << 32 | id); each pair's rank is the number of keys before it (ties by
// position), and write(rank, e) runs for every pair e whose rank is below k. count^2 / threads compares of broadcast
// reads and no barrier: for a few hundred pairs far cheaper than a bitonic sort's barrier per stage (256 pairs sorted
// by 128 threads: ~13 us, ncu). Every thread of the block calls it, after a barrier that published the keys.
constexpr int kRankOrderMax = 512;  // the most pairs worth ranking this way

template <typename Write>
__device__ __forceinline__ void rankOrder(const unsigned long long* keys, int count, int k, Write write) {
  for (int e = threadIdx.x; e < count; e += blockDim.x) {
    const unsigned long long mine = keys[e];
    int rank = 0;
#pragma unroll 4
    for (int j = 0; j < count; ++j) {
      const unsigned long long kj = keys[j];
      rank += (kj < mine || (kj == mine && j < e)) ? 1 : 0;
    }
    if (rank < k) write(rank, e);
  }
}

// The end of a selection of `count` pairs ranked by rankOrder: `keys` (shared memory, radixKey(value) << 32 | id, this
// block's threads filled it) in order, the k best written to outK / outIdx as outScale x value and id, and the slots
// from count to k as outScale x inf and -1. Takes the barrier that publishes the keys; every thread of the block calls
// it. The radix selections (radixSortAndWrite) and the re-rank that selects itself (rerankSelectRow) end here.
__device__ __forceinline__ void rankAndWrite(const unsigned long long* keys, int count, int k, float outScale,
                                             float* outK, int* outIdx) {
  for (int e = count + threadIdx.x; e < k; e += blockDim.x) {
    outK[e] = outScale * GV_INF;
    outIdx[e] = -1;
  }
  __syncthreads();
  rankOrder(keys, count, k, [&](int rank, int e) {
    outK[rank] = outScale * radixValue((unsigned)(keys[e] >> 32));
    outIdx[rank] = (int)(unsigned)keys[e];
  });
}

}  // namespace gv

