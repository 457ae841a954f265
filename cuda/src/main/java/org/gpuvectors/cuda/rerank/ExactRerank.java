package org.gpuvectors.cuda.rerank;

import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.select.KSelect;
import org.gpuvectors.cuda.select.SelectParams;
import jcuda.Pointer;

/**
 * The exact FP32 re-rank of rows of candidates (rerank_kernels.cu: {@code gv_rerank_exact}, {@code
 * gv_rerank_exact_table}, and {@code gv_rerank_stats} for the TF32 certificate's inputs), described once: what is
 * re-ranked (the vectors and queries, the candidates' keys and ids, k, the metric) and where each result goes (exact
 * keys, output, certificate stats, chunk keys). Every caller - the flat index's TF32 and FP16 candidate passes and its
 * small scored search, the IVF-PQ device re-rank, a scan table's re-rank - fills its {@link RerankParams} here, so
 * that the metric's key sign, the output's scale and the self-selecting mode are decided in one place; the callers
 * keep only which parts they give.
 *
 * <p>Keys are smaller-is-better (squared L2, or -x.q for inner product and cosine); an output holds inner products
 * back as +x.q ({@link #outScale}). Not thread-safe (a value being filled); enqueues under the device lock.
 */
public final class ExactRerank {
  private final RerankParams p = new RerankParams();
  private final boolean ip;

  /**
   * The re-rank of {@code rows} rows of {@code candidates} candidates each, of {@code dims} dimensions, keeping
   * {@code k} per row, by {@code metric}'s key.
   */
  public ExactRerank(Metric metric, int dims, int rows, int candidates, int k) {
    ip = metric != Metric.L2;
    p.dims = dims;
    p.numQueries = rows;
    p.candidates = candidates;
    p.k = k;
    p.metric = ip ? 1 : 0;
  }

  /** One index's raw vectors and its queries (device addresses; a table's re-rank gives them per entry instead). */
  public ExactRerank vectors(long vectors, long queries) {
    p.vectors = vectors;
    p.queries = queries;
    return this;
  }

  /**
   * The candidates' approximate keys and their ids (device addresses, rows {@code candidates} apart); without ids
   * (0), a row's candidates are every vector in order (the small scored search).
   */
  public ExactRerank candidates(long keys, long ids) {
    p.candKeys = keys;
    p.candIdx = ids;
    return this;
  }

  /** Where the candidates' exact keys go (device address, rows {@code candidates} apart). */
  public ExactRerank exactKeys(long address) {
    p.exactKeys = address;
    return this;
  }

  /** Where the certificate's inputs go: 4 floats a row ({@link RerankParams#stats}); 0: none. */
  public ExactRerank stats(long address) {
    p.stats = address;
    return this;
  }

  /**
   * The output (device addresses, k a row): {@code outK} the final values, which the stats launch reads, inner
   * products written back as +x.q; {@code outIdx} the ids, written only by a re-rank that selects ({@link
   * #enqueueSelecting}; 0 otherwise). Without an output the scale stays 1: nothing is written with it.
   */
  public ExactRerank output(long outK, long outIdx) {
    p.outK = outK;
    p.outIdx = outIdx;
    p.outScale = ip ? -1f : 1f;
    return this;
  }

  /** The candidate pass's keys by chunk before their merge (null: none), for the certificate's least last key. */
  public ExactRerank chunkKeys(ChunkKeys chunkKeys) {
    if (chunkKeys != null) {
      p.chunkKeys = chunkKeys.address();
      p.chunkRowStride = chunkKeys.rowStride();
      p.chunkK = chunkKeys.perChunk();
      p.chunks = chunkKeys.chunks();
    }
    return this;
  }

  /**
   * The re-rank selects each row's k best itself ({@link RerankParams#rowsDone}): the exact keys at {@code
   * exactKeys}, the rows' zeroed counts of done blocks at {@code rowsDone}.
   */
  ExactRerank selecting(long exactKeys, long rowsDone) {
    p.exactKeys = exactKeys;
    p.rowsDone = rowsDone;
    return this;
  }

  /**
   * The re-rank leaves its exact keys at {@code exactKeys} for a merge after it, and the output's values at {@code
   * outK} (the merge's and the stats launch's; no ids).
   */
  ExactRerank merging(long exactKeys, long outK) {
    return exactKeys(exactKeys).output(outK, 0);
  }

  /** The parameters as filled so far (tests compare their encoding). */
  RerankParams params() {
    return p;
  }

  /** Enqueues {@code gv_rerank_exact} (one index's rows). Caller holds the device lock. */
  public void enqueue(GpuDevice device) {
    p.enqueueExact(device);
  }

  /**
   * Enqueues the re-rank of one index's rows ({@code table} null: {@code gv_rerank_exact}) or of the rows of the
   * table's entries ({@code gv_rerank_exact_table}). Caller holds the device lock.
   */
  public void enqueue(GpuDevice device, RerankTable table) {
    if (table == null) {
      p.enqueueExact(device);
    } else {
      p.enqueueExactTable(device, table);
    }
  }

  /**
   * Enqueues the re-rank that selects each row's k best itself (at most {@link RerankParams#SELECT_MAX_CANDIDATES}
   * candidates a row) into the {@link #output}, values and ids: its exact keys and the rows' done counts in
   * temporaries that return to the pool (reuse is ordered on the stream). With {@link #stats} it writes the
   * certificate's k-th key too (no stats launch). Caller holds the device lock.
   */
  public void enqueueSelecting(GpuDevice device, RerankTable table) {
    try (DeviceBuffer exact = device.allocate(4L * p.numQueries * p.candidates);
         DeviceBuffer done = device.allocate(4L * p.numQueries)) {
      device.clear(done);
      selecting(exact.address(), done.address());
      enqueue(device, table);
    }
  }

  /**
   * Enqueues the re-rank that leaves its exact keys in {@code exact} (rows {@code candidates} apart; one index's rows
   * with {@code table} null, else the table's), then each row's k best of them by their candidates' ids ({@link
   * KSelect#mergeCandidates}) into {@code outV} / {@code outI} from element {@code outElement}, k a row, inner
   * products as +x.q: for rows the re-rank cannot select itself, or a pass whose stats launch follows. The {@link
   * #output}'s values are set here. Caller holds the device lock.
   */
  public void enqueueThenMerge(GpuDevice device, RerankTable table, DeviceBuffer exact, DeviceBuffer outV, DeviceBuffer outI,
                        long outElement) {
    merging(exact.address(), outV.address() + 4L * outElement).enqueue(device, table);
    SelectParams merge = new SelectParams().input(exact, p.numQueries, p.candidates, p.candidates).k(p.k)
        .scales(1f, p.outScale).output(outV, outI, p.k, outElement);
    merge.inIdx = p.candIdx;
    KSelect.mergeCandidates(device, merge);
  }

  /**
   * Enqueues {@code gv_rerank_stats}: the certificate's inputs from the final values at the {@link #output} (for a
   * re-rank that did not select itself). Caller holds the device lock.
   */
  public void enqueueStats(GpuDevice device) {
    int rows = p.numQueries;
    device.module().launch("gv_rerank_stats", (rows + 255) / 256, 1, 256, 0, device.stream(), Pointer.to(p.encode()));
  }

  /**
   * A candidate pass's keys by chunk before their merge, where the chunks kept fewer candidates than the re-rank
   * takes: rows {@code rowStride} keys apart from {@code address}, each of {@code chunks} chunks of {@code perChunk}
   * keys (one index; a table's re-rank takes both from its entries, and they are 0 here).
   */
  public record ChunkKeys(long address, long rowStride, int perChunk, int chunks) {}
}
