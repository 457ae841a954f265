package org.gpuvectors.cuda;

/**
 * What a part of a resident index's device memory holds. The parts differ in what a byte of them is worth to a search
 * (codes answer for a vector in a few bytes, raw vectors make results exact), so an operator sizing a node, and the
 * residency deciding what stays, need them apart: {@code _gpu_vectors/stats} reports resident bytes by part.
 */
public enum MemoryPart {
  /** The vectors at full precision: FP32 rows, or a byte, bit or bfloat16 field's rows at their own size. */
  VECTORS("vectors"),
  /** A compact (FP16) copy of the vectors that candidates are selected from, re-ranked from the full ones. */
  COMPACT_VECTORS("compact_vectors"),
  /** The vectors' squared norms (L2 searches). */
  NORMS("norms"),
  /** IVF: the coarse quantizer, with its own norms and copies. */
  CENTROIDS("centroids"),
  /** IVF: each list position's vector ordinal and the lists' offsets. */
  LISTS("lists"),
  /** ivf_pq: the product-quantization codes, a few bytes a vector. */
  PQ_CODES("pq_codes"),
  /** ivf_pq: the codebooks and the per-position terms precomputed from them. */
  PQ_CODEBOOKS("pq_codebooks"),
  /** graph: the adjacency lists and entry points. */
  GRAPH("graph");

  private final String key;

  MemoryPart(String key) {
    this.key = key;
  }

  /** The part's name in stats. */
  public String key() {
    return key;
  }
}
