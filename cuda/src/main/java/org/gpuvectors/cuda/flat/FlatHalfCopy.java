package org.gpuvectors.cuda.flat;

import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.pass.PassCounters;
import org.gpuvectors.cuda.rerank.CandidateBound;
import org.gpuvectors.cuda.rerank.ExactRerank;
import org.gpuvectors.cuda.rerank.RerankStats;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.select.ChunkedSelection;
import org.gpuvectors.cuda.select.SelectParams;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import jcuda.Pointer;

/**
 * A flat index's FP16 copy and the candidate search of small batches over it ({@link GpuFlatIndex.Strategy#HALF_SCAN}):
 * the vectors times one power of two (their largest magnitude below 2^14), rounded to FP16, rows padded to {@link
 * HalfScanParams#DIM_STEP} dimensions; k' candidates a query from the copy on tensor cores (flat_half_scan.cu), their
 * exact FP32 keys from the index's vectors and the k best of them, and per query the certificate ({@link
 * CandidateBound#half}) that decides whether the k best are the exact ones. Made by {@link GpuFlatIndex#addHalfCopy},
 * which owns it and closes it with its own buffers.
 *
 * <p>Threading: enqueues under the device lock; {@link #uncertified} and the counters from any thread.
 */
public final class FlatHalfCopy implements AutoCloseable {
  private final GpuDevice device;
  private final DeviceBuffer halves; // n x dimsPad FP16
  private final float unscale; // 1 / the vectors' scale
  private final CandidateBound bound;
  private final AtomicLong queries = new AtomicLong();
  private final AtomicLong rejected = new AtomicLong();
  /**
   * Whether a query was rejected because a chunk kept too few candidates ({@link #uncertified}): from then on every
   * chunk of this copy keeps k' ({@link HalfScanParams#chunkCandidates} not applied), so that rows in an order that
   * gathers neighbours cost one FP32 search, not one per query.
   */
  private volatile boolean chunkLimited;

  private FlatHalfCopy(GpuDevice device, DeviceBuffer halves, float unscale, CandidateBound bound) {
    this.device = device;
    this.halves = halves;
    this.unscale = unscale;
    this.bound = bound;
  }

  /** Device bytes of the copy of n vectors of {@code dims} dimensions. */
  static long bytes(long n, int dims) {
    return 2L * n * HalfScanParams.paddedDims(dims);
  }

  /**
   * The copy of the {@code n} x {@code dims} FP32 vectors at device address {@code vectors} (normalised for cosine),
   * or null when a component is infinite (no power of two brings it into FP16's range); {@code maxNorm2}: their
   * largest FP32 ||x||^2 (the bound's X^2). Waits for the device (one read of 4 bytes). Caller holds the lock.
   */
  static FlatHalfCopy make(GpuDevice device, long vectors, int n, int dims, Metric metric, float maxNorm2) {
    float max = maxAbs(device, vectors, (long) n * dims);
    if (!Float.isFinite(max)) {
      return null;
    }
    float scale = HalfScanParams.halfScale(max);
    int dimsPad = HalfScanParams.paddedDims(dims);
    DeviceBuffer h = device.allocate(bytes(n, dims));
    boolean ok = false;
    try {
      long total = (long) n * dimsPad;
      int blocks = (int) Math.max(1, Math.min(8L * device.multiprocessorCount(), (total + 255) / 256));
      device.module().launch("gv_to_half", blocks, 1, 256, 0, device.stream(), Pointer.to(new long[] {vectors}),
          Pointer.to(new long[] {n}), Pointer.to(new int[] {dims}), Pointer.to(new int[] {dimsPad}),
          Pointer.to(new float[] {scale}), Pointer.to(new long[] {h.address()}));
      FlatHalfCopy copy = new FlatHalfCopy(device, h, 1f / scale, CandidateBound.half(metric, dims, maxNorm2));
      ok = true;
      return copy;
    } finally {
      if (!ok) {
        h.close();
      }
    }
  }

  /** The largest |x_i| of {@code count} floats at {@code x} (NaN skipped, +inf kept); waits. Caller holds the lock. */
  private static float maxAbs(GpuDevice device, long x, long count) {
    try (DeviceBuffer out = device.allocate(4)) {
      device.clear(out);
      int blocks = (int) Math.max(1, Math.min(8L * device.multiprocessorCount(), (count + 255) / 256));
      device.module().launch("gv_max_abs", blocks, 1, 256, 0, device.stream(), Pointer.to(new long[] {x}),
          Pointer.to(new long[] {count}), Pointer.to(new long[] {out.address()}));
      int[] bits = new int[1];
      device.download(out, 0, bits, 0, 1);
      return Float.intBitsToFloat(bits[0]);
    }
  }

  long deviceBytes() {
    return halves.bytes();
  }

  /**
   * The scan's parameters for {@code nq} queries and {@code kc} candidates over {@code index} (this copy's owner;
   * arguments as {@link GpuFlatIndex#enqueueSearch}), without the chunks and the output, which the caller plans (as
   * {@link GpuFlatIndex#scanParams}: a scan table plans them over all its members). Caller holds the lock.
   */
  HalfScanParams params(GpuFlatIndex index, long normsAddress, long queries, int nq, int kc, long acceptAddress,
                        long acceptRowWords) {
    HalfScanParams p = new HalfScanParams();
    p.vectors = halves.address();
    p.norms = index.metric() == Metric.L2 ? normsAddress : 0;
    p.queries = queries;
    p.acceptBits = acceptAddress;
    p.acceptRowWords = acceptRowWords;
    p.n = index.size();
    p.dims = index.dims();
    p.dimsPad = HalfScanParams.paddedDims(index.dims());
    p.numQueries = nq;
    p.k = kc;
    p.metric = index.metric() == Metric.L2 ? 0 : 1;
    p.vectorUnscale = unscale;
    return p;
  }

  /**
   * Enqueues the search of {@code nq} queries for k over {@code index} (its FP32 vectors and norms at the given
   * addresses; the other arguments as {@link GpuFlatIndex#enqueueSearch}, plus {@code stats}: the device address of 4
   * floats per query for the certificate, {@link #uncertified}): k' candidates per query from the copy (one scan
   * launch whose chunks keep {@link #chunkCandidates} each, a BlockSelect merge of them), their exact FP32 keys and
   * the k best of them into the output (one re-rank launch that selects too), and the certificate's inputs. Caller
   * holds the lock; the results are final only for the queries the certificate then accepts.
   */
  void enqueueSearch(GpuFlatIndex index, long vectors, long normsAddress, long queries, int nq, int k,
                     long acceptAddress, long acceptRowWords, DeviceBuffer outV, DeviceBuffer outI, long outElement,
                     long stats) {
    int kc = CandidateBound.candidates(k);
    HalfScanParams p = params(index, normsAddress, queries, nq, kc, acceptAddress, acceptRowWords)
        .planChunks(device.multiprocessorCount());
    try (DeviceBuffer candV = device.allocate(4L * nq * kc); DeviceBuffer candI = device.allocate(4L * nq * kc)) {
      ExactRerank rerank = new ExactRerank(index.metric(), index.dims(), nq, kc, k).vectors(vectors, queries)
          .candidates(candV.address(), candI.address()).stats(stats)
          .output(outV.address() + 4L * outElement, outI.address() + 4L * outElement);
      if (p.chunks == 1) {
        p.outK = candV.address();
        p.outIdx = candI.address();
        p.outRowStride = kc;
        p.enqueue(device);
        rerank.enqueueSelecting(device, null);
        return;
      }
      p.k = chunkCandidates(kc, p.n, p.chunks, p.chunkLen);
      try (ChunkedSelection lists = ChunkedSelection.allocate(device, nq, p.chunks, p.k)) {
        p.outK = lists.keys().address();
        p.outIdx = lists.ids().address();
        p.outRowStride = lists.width();
        p.enqueue(device);
        lists.merge(device, new SelectParams().k(kc).output(candV, candI, kc, 0));
        if (p.k < kc) { // the certificate takes the least of the chunks' last keys too
          rerank.chunkKeys(new ExactRerank.ChunkKeys(lists.keys().address(), lists.width(), p.k, p.chunks));
        }
        rerank.enqueueSelecting(device, null);
      }
    }
  }

  /**
   * Candidates each chunk of the scan keeps ({@link HalfScanParams#chunkCandidates}), k' once a query was rejected
   * for a chunk's sake ({@link #uncertified}).
   */
  int chunkCandidates(int kc, long n, int chunks, long chunkLen) {
    return chunkLimited ? kc : HalfScanParams.chunkCandidates(kc, n, chunks, chunkLen);
  }

  /**
   * The queries (ascending, 0-based within the search) whose candidates are not certified to hold their exact k best,
   * from the stats {@link #enqueueSearch} wrote ({@code nq} x 4 floats from {@code stats[from]}); counted here and on
   * the device ({@link PassCounters#halfScanStats}), not at enqueue: a pass replayed as a CUDA graph enqueues nothing.
   * Such a query must be searched again on the FP32 path.
   */
  int[] uncertified(float[] stats, int from, int nq) {
    float[] own = from == 0 && stats.length == 4 * nq ? stats : Arrays.copyOfRange(stats, from, from + 4 * nq);
    int[] out = bound.uncertified(own, nq);
    queries.addAndGet(nq);
    rejected.addAndGet(out.length);
    PassCounters.of(device).countHalfScan(nq, out.length);
    for (int q : out) {
      chunkLimited |= bound.chunkLimited(own, q);
    }
    return out;
  }

  /**
   * Whether a query was rejected for a chunk's sake: then this copy's chunks keep k' ({@link #chunkCandidates}), and
   * the passes captured before must be evicted (they bake the smaller count in).
   */
  boolean chunkLimited() {
    return chunkLimited;
  }

  /** Queries whose certificates were checked, and those rejected, since the copy was made. */
  RerankStats stats() {
    return new RerankStats(queries.get(), rejected.get());
  }

  /** Returns the copy's device memory to the pool. Caller holds the lock (the owner's close). */
  @Override
  public void close() {
    halves.close();
  }
}
