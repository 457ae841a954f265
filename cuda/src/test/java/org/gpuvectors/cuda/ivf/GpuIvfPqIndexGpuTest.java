package org.gpuvectors.cuda.ivf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;
import org.gpuvectors.cuda.CpuOracle;
import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.GpuTestCase;
import org.gpuvectors.cuda.IvfConfig;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.device.HostRows;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.flat.GpuFlatIndexGpuTest;
import org.gpuvectors.cuda.ivf.GpuIvfFlatIndexGpuTest.Data;
import org.gpuvectors.cuda.ivf.GpuIvfFlatIndexGpuTest.Filter;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.PassCounters;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.select.KSelect;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * IVF-PQ (IVFADC) candidate search on the GPU against a CPU reference of the same ADC search written here, on
 * each of the index's scan paths ({@link Path}: the full per-pair tables in shared or global memory, the
 * precomputed tables per (query, list) block or per query block): the
 * coarse step as GpuIvfFlatIndexGpuTest's reference (the nprobe nearest centroids in double; a query whose
 * nprobe-th and next centroid are a float32 near-tie is counted and skipped), then per probed list the lookup
 * table in double from the same float inputs (L2: of the residual query - centroid; inner product / cosine: of
 * the query, plus {@code <q, centroid>}), every accepted code's approximate value, best first (ties by ordinal).
 * Data: GpuIvfFlatIndexGpuTest's clustered vectors and lists (4 empty lists; query 0 is an empty list's
 * centroid); codebooks are random residual samples (this checks the ADC arithmetic, not training) and codes the
 * nearest codewords. Skips without a GPU.
 *
 * <p>Tolerance (what {@link CpuOracle#compare} allows a reported value to differ from the double reference, and an
 * id to be missing or extra at a near-tie with the k-th value), per candidate, u = 2^-24. L2, full tables: the
 * residual r_d = fl(q_d - c_d), the difference t = fl(r_d - w_d) and its square each round once, so each squared
 * term errs by at most ~5u (|r_d| + |w_d|)^2, and the float sums of subDims terms per table entry and of m entries
 * per code add gamma_(subDims + m) of the sum of the terms. L2, precomputed tables: ||q - c||^2 (a float sum of
 * dims squares) + the code term (sum_d w_d (w_d + 2 c_d), float, subDims + m terms) + the query table's entries
 * (-2 <q_j, w_j>, m sums of subDims products), so the errors are gamma_(dims + subDims + m) of the sum of the
 * magnitudes (q_d - c_d)^2 + |w_d| (|w_d| + 2 |c_d|) + 2 |q_d w_d|. One tolerance for both: tol = (2 (dims + subDims
 * + m) + 16) u M with M = sum_d [(|r_d| + |w_d|)^2 + r_d^2 + |w_d| (|w_d| + 2 |c_d|) + 2 |q_d w_d|] over the
 * code's codewords. Inner product / cosine (both paths: the table's products and sums err by
 * gamma_(subDims + m) sum |q_d w_d|, {@code <q, centroid>} (a float dot product in any order, the centroid
 * re-normalised for cosine by the coarse index) by (dims + 4) u sum |q_d c_d|, the final add by u |value|: tol =
 * (2 (dims + subDims + m) + 16) u (sum |q_d w_d| + sum |q_d c_d|) + 4 u |value|). The reference takes cosine
 * queries as BatchSearch normalises them (float), so normalisation adds nothing. For the test's data these are
 * about 1e-4 of the values: they excuse genuine near-ties only.
 */
public class GpuIvfPqIndexGpuTest extends GpuTestCase {
  private static final int N = 20_000;
  private static final int NQ = 30;
  private static final int[] KS = {1, 10, 100, 400};

  /** A product quantizer: its codebooks, and the codes of the vectors in list order. */
  public record Pq(PqCodebook book, byte[] codes, IvfLists lists) {}

  /** One index configuration: dims, sub-quantizers, bits, and whether its full tables are forced into global memory. */
  private record Config(int dims, int m, int bits, boolean globalTables) {
    /** The paths its searches are checked on: both precomputed ones and one full-table one. */
    Path[] paths() {
      return new Path[] {globalTables ? Path.FULL_GLOBAL : Path.FULL_SHARED, Path.PRECOMPUTED_PER_PAIR,
          Path.PRECOMPUTED_PER_QUERY, Path.PRECOMPUTED_KEYS, Path.PRECOMPUTED_KEYS_BATCH};
    }
  }

  /** The index's scan paths, each forced by the configuration of a device of its own ({@link #config(Path)}). */
  enum Path {
    /** The full per-pair table (ivf_pq.cu) in shared memory where it fits. */
    FULL_SHARED,
    /** The full per-pair table in global memory. */
    FULL_GLOBAL,
    /** Precomputed tables (ivf_pq_tables.cu), a block per (query, probed list). */
    PRECOMPUTED_PER_PAIR,
    /** Precomputed tables, a block per query for all its lists. */
    PRECOMPUTED_PER_QUERY,
    /** Precomputed tables, every key of a query's lists in one row, then a radix selection (small batches). */
    PRECOMPUTED_KEYS,
    /**
     * As PRECOMPUTED_KEYS, the rows written by a block per query over all its lists, in blocks of queries (large
     * batches at large k, {@link GpuIvfPqIndex#keysBlockQueries}; here blocks of 7).
     */
    PRECOMPUTED_KEYS_BATCH
  }

  private final List<String> failures = new ArrayList<>();
  private int cases;
  private int ambiguous;

  /** Rows normalised in float as the coarse index and BatchSearch do (cosine), else a copy. */
  private static float[] asSearched(float[] x, int rows, int dims, Metric metric) {
    float[] y = x.clone();
    if (metric == Metric.COSINE) {
      HostRows.normalize(y, 0, rows, dims);
    }
    return y;
  }

  /**
   * Codebooks of random residual sub-vectors (vector - its list's centroid, both normalised for cosine) and
   * the codes: per sub-vector the nearest codeword, in list order. The lists' centroids are normalised for cosine
   * (as the codec builds them).
   */
  public static Pq quantize(Data data, int m, int bits, Random r) {
    int dims = data.dims();
    int subDims = dims / m;
    int ksub = 1 << bits;
    int nlist = data.lists().nlist();
    float[] x = asSearched(data.vectors(), data.n(), dims, data.metric());
    float[] centroids = asSearched(data.lists().centroids(), nlist, dims, data.metric());
    float[] books = new float[m * ksub * subDims];
    for (int j = 0; j < m; j++) {
      for (int c = 0; c < ksub; c++) {
        int i = r.nextInt(data.n());
        int l = data.listOf()[i];
        for (int d = 0; d < subDims; d++) {
          int at = j * subDims + d;
          books[(j * ksub + c) * subDims + d] = x[i * dims + at] - centroids[l * dims + at];
        }
      }
    }
    int[] ords = data.lists().ords();
    byte[] codes = new byte[data.n() * m];
    for (int p = 0; p < ords.length; p++) {
      int ord = ords[p];
      int l = data.listOf()[ord];
      for (int j = 0; j < m; j++) {
        int best = 0;
        double bestDist = Double.MAX_VALUE;
        for (int c = 0; c < ksub; c++) {
          double s = 0;
          for (int d = 0; d < subDims; d++) {
            int at = j * subDims + d;
            double t = (double) x[ord * dims + at] - centroids[l * dims + at] - books[(j * ksub + c) * subDims + d];
            s += t * t;
          }
          if (s < bestDist) {
            bestDist = s;
            best = c;
          }
        }
        codes[p * m + j] = (byte) best;
      }
    }
    return new Pq(new PqCodebook(m, bits, subDims, books), codes,
        new IvfLists(nlist, centroids, data.lists().offsets(), ords));
  }

  /** The reference ADC search of one query: its best (up to kmax), and per ordinal its value and tolerance (NaN: not selectable). */
  private record Reference(List<CpuOracle.Entry> best, double[] value, double[] tolerance) {}

  /**
   * Query q's reference for nprobe: null on a coarse near-tie. {@code searched}: the queries as the GPU sees them
   * (cosine: normalised in float); the coarse order from the raw queries (CpuOracle normalises in double).
   */
  private static Reference reference(Data data, Pq pq, float[] queries, float[] searched, int q, int nprobe,
                                     long[] accept, int kmax) {
    int dims = data.dims();
    int nlist = data.lists().nlist();
    int probes = Math.min(nprobe, nlist);
    List<CpuOracle.Entry> order = CpuOracle.search(data.lists().centroids(), nlist, dims, data.metric(), queries, q,
        nlist, null);
    if (probes < nlist) {
      CpuOracle.Truth coarse = CpuOracle.searchTruth(data.lists().centroids(), nlist, dims, data.metric(), queries, q,
          null);
      CpuOracle.Entry last = order.get(probes - 1);
      CpuOracle.Entry next = order.get(probes);
      if (Math.abs(last.value() - next.value()) <= coarse.tolerance(last.id()) + coarse.tolerance(next.id())) {
        return null;
      }
    }
    PqCodebook book = pq.book();
    int m = book.m();
    int ksub = book.ksub();
    int subDims = book.subDims();
    float[] w = book.codebooks();
    float[] centroids = pq.lists().centroids();
    boolean l2 = data.metric() == Metric.L2;
    double[] table = new double[m * ksub];
    double[] magnitude = new double[m * ksub];
    double[] value = new double[data.n()];
    double[] tolerance = new double[data.n()];
    Arrays.fill(value, Double.NaN);
    double[] r = new double[dims];
    List<CpuOracle.Entry> candidates = new ArrayList<>();
    for (int i = 0; i < probes; i++) {
      int l = order.get(i).id();
      double base = 0;
      double baseMagnitude = 0;
      for (int d = 0; d < dims; d++) {
        double qd = searched[q * dims + d];
        double cd = centroids[l * dims + d];
        r[d] = l2 ? qd - cd : qd;
        base += qd * cd;
        baseMagnitude += Math.abs(qd * cd);
      }
      if (l2 || i == 0) { // the inner-product table is the same for every list
        for (int j = 0; j < m; j++) {
          for (int c = 0; c < ksub; c++) {
            double s = 0;
            double mag = 0;
            for (int d = 0; d < subDims; d++) {
              double rd = r[j * subDims + d];
              double wd = w[(j * ksub + c) * subDims + d];
              if (l2) {
                double qd = searched[q * dims + j * subDims + d];
                double cd = centroids[l * dims + j * subDims + d];
                s += (rd - wd) * (rd - wd);
                // the full table's terms, then the precomputed tables' (term 1's share, code term, query table)
                mag += (Math.abs(rd) + Math.abs(wd)) * (Math.abs(rd) + Math.abs(wd));
                mag += rd * rd + Math.abs(wd) * (Math.abs(wd) + 2 * Math.abs(cd)) + 2 * Math.abs(qd * wd);
              } else {
                s += rd * wd;
                mag += Math.abs(rd * wd);
              }
            }
            table[j * ksub + c] = s;
            magnitude[j * ksub + c] = mag;
          }
        }
      }
      int[] offsets = pq.lists().offsets();
      for (int p = offsets[l]; p < offsets[l + 1]; p++) {
        int ord = pq.lists().ords()[p];
        if (!CpuOracle.accepted(accept, ord)) {
          continue;
        }
        double s = l2 ? 0 : base;
        double mag = l2 ? 0 : baseMagnitude;
        for (int j = 0; j < m; j++) {
          int c = pq.codes()[p * m + j] & 0xFF;
          s += table[j * ksub + c];
          mag += magnitude[j * ksub + c];
        }
        value[ord] = s;
        tolerance[ord] = l2 ? (2.0 * (dims + subDims + m) + 16) * CpuOracle.U32 * mag
            : (2.0 * (dims + subDims + m) + 16) * CpuOracle.U32 * mag + 4 * CpuOracle.U32 * Math.abs(s);
        candidates.add(new CpuOracle.Entry(ord, s));
      }
    }
    Comparator<CpuOracle.Entry> byValue = Comparator.comparingDouble(CpuOracle.Entry::value);
    candidates.sort((l2 ? byValue : byValue.reversed()).thenComparingInt(CpuOracle.Entry::id));
    return new Reference(new ArrayList<>(candidates.subList(0, Math.min(kmax, candidates.size()))), value, tolerance);
  }

  /** The references of the masks.length queries. */
  private static Reference[] references(Data data, Pq pq, float[] queries, int nprobe, long[][] masks, int kmax) {
    int nq = masks.length;
    float[] searched = asSearched(queries, nq, data.dims(), data.metric());
    Reference[] refs = new Reference[nq];
    for (int q = 0; q < nq; q++) {
      refs[q] = reference(data, pq, queries, searched, q, nprobe, masks[q], kmax);
    }
    return refs;
  }

  private static CpuOracle.Truth truth(Reference ref, Metric metric) {
    return new CpuOracle.Truth() {
      public boolean largestFirst() {
        return metric.largestFirst();
      }

      public boolean selectable(int id) {
        return id >= 0 && id < ref.value().length && !Double.isNaN(ref.value()[id]);
      }

      public double value(int id) {
        return ref.value()[id];
      }

      public double tolerance(int id) {
        return ref.tolerance()[id];
      }
    };
  }

  private void check(String what, SearchResult res, Reference[] refs, Metric metric) {
    int k = res.k();
    int[] ids = new int[res.numQueries() * k];
    float[] values = new float[ids.length];
    for (int q = 0; q < res.numQueries(); q++) {
      for (int i = 0; i < k; i++) {
        ids[q * k + i] = res.id(q, i);
        values[q * k + i] = res.distance(q, i);
      }
    }
    for (int q = 0; q < refs.length; q++) {
      cases++;
      Reference ref = refs[q];
      if (ref == null) {
        ambiguous++;
        continue;
      }
      List<CpuOracle.Entry> best = ref.best().subList(0, Math.min(k, ref.best().size()));
      String f = CpuOracle.compare(best, ids, values, q * k, k, truth(ref, metric));
      if (f != null) {
        failures.add(what + " query " + q + ": " + f);
      }
    }
  }

  private static SearchResult search(GpuIvfPqIndex index, float[] queries, int k, int nprobe, Filter f,
                                     long[][] masks) {
    int nq = masks.length;
    if (f == Filter.PER_QUERY) {
      return BatchSearch.run(index.device(), List.of(new SearchGroup(index, queries, nq, k, new SearchParams.Ivf(nprobe), null, masks)))[0];
    }
    return index.search(queries, nq, k, nprobe, masks[0]);
  }

  private static GpuIvfPqIndex upload(Pq pq, Data data) {
    return upload(device, pq, data);
  }

  private static GpuIvfPqIndex upload(GpuDevice d, Pq pq, Data data) {
    return GpuIvfPqIndex.upload(d, pq.lists(), pq.book(), pq.codes(), data.dims(), data.metric());
  }

  /** The devices opened with a non-default ivf configuration ({@link #deviceWith}), closed after the class. */
  private static final Map<IvfConfig, GpuDevice> DEVICES = new HashMap<>();

  @AfterAll
  static void closeDevices() {
    DEVICES.values().forEach(GpuDevice::close);
    DEVICES.clear();
  }

  /** A device (of the same GPU) searching as {@code ivf} says, opened on first use. */
  static GpuDevice deviceWith(IvfConfig ivf) {
    return DEVICES.computeIfAbsent(ivf, c -> GpuDevice.open(0, GpuConfig.builder().ivf(c).build()));
  }

  /** The ivf configuration that forces an index's searches onto {@code path}. */
  static IvfConfig config(Path path) {
    return IvfConfig.defaults()
        .withGlobalTables(path == Path.FULL_GLOBAL)
        .withFullTables(path == Path.FULL_SHARED)
        .withGroupedMinQueries(path == Path.PRECOMPUTED_PER_QUERY ? 0 : Integer.MAX_VALUE)
        .withKeysMaxQueries(path == Path.PRECOMPUTED_KEYS ? Integer.MAX_VALUE : 0)
        .withKeysBatchMinK(path == Path.PRECOMPUTED_KEYS_BATCH ? 1 : Integer.MAX_VALUE)
        .withKeysBatchMaxBlock(7); // several blocks of queries, the last one short
  }

  /** One index uploaded on each path's device as it is first asked for ({@link #on}); closed together. */
  private static final class PathIndexes implements AutoCloseable {
    private final Map<Path, GpuIvfPqIndex> indexes = new EnumMap<>(Path.class);
    private final Function<GpuDevice, GpuIvfPqIndex> upload;

    PathIndexes(Function<GpuDevice, GpuIvfPqIndex> upload) {
      this.upload = upload;
    }

    /** The index on the device whose searches take {@code path}. */
    GpuIvfPqIndex on(Path path) {
      return indexes.computeIfAbsent(path, p -> upload.apply(deviceWith(config(p))));
    }

    @Override
    public void close() {
      indexes.values().forEach(GpuIvfPqIndex::close);
      indexes.clear();
    }
  }

  /** Device bytes of an index of n vectors of m-byte codes: the codes padded to 4 bytes, and the L2 code terms. */
  private static long expectedBytes(Pq pq, Data data) {
    int nlist = data.lists().nlist();
    int dims = data.dims();
    int n = data.n();
    long centroidBytes = 4L * nlist * dims + (data.metric() == Metric.L2 ? 4L * nlist : 0);
    // the interleaved layout: whole groups of 32 positions, codes padded to whole 16-byte chunks
    long codeBytes = Math.max(16, (n + 31L) / 32 * 32 * ((pq.book().m() + 15) / 16 * 16));
    return centroidBytes + codeBytes + 4L * n + 4L * (nlist + 1) + 4L * pq.book().codebooks().length
        + (data.metric() == Metric.L2 ? 4L * n : 0);
  }

  /**
   * Every metric, filter (none, shared, sparse: fewer accepted than k, per query), nprobe 1 / 8 / nlist, k = 1, 10,
   * 100, 400 (the 512 bucket) and each config's paths ({@link Config#paths}), on: dims 64 with m = 16, bits 8 (code words of 4 bytes); dims 48 with m = 6, bits 4 (byte
   * codes, 16 codewords); dims 64 with m = 8, bits 8, the tables forced into global memory.
   */
  @Test
  void matchesAdcReference() {
    Random r = new Random(31);
    for (Config cfg : new Config[] {new Config(64, 16, 8, false), new Config(48, 6, 4, false),
        new Config(64, 8, 8, true)}) {
      float[] vectors = GpuIvfFlatIndexGpuTest.clustered(N, cfg.dims(), r);
      for (Metric metric : Metric.values()) {
        Data data = GpuIvfFlatIndexGpuTest.lists(vectors, N, cfg.dims(), metric, r);
        Pq pq = quantize(data, cfg.m(), cfg.bits(), r);
        float[] queries = GpuIvfFlatIndexGpuTest.queries(data, NQ, r);
        int nlist = data.lists().nlist();
        try (GpuIvfPqIndex index = upload(pq, data);
             PathIndexes paths = new PathIndexes(d -> upload(d, pq, data))) {
          assertEquals(expectedBytes(pq, data), index.deviceBytes());
          assertEquals(0, index.deviceBytesByPart().get(org.gpuvectors.cuda.MemoryPart.VECTORS), "codes, no vectors");
          assertTrue(index.deviceBytesByPart().get(org.gpuvectors.cuda.MemoryPart.PQ_CODES) >= (long) N * pq.book().m());
          assertEquals(N, index.size());
          assertEquals(nlist, index.nlist());
          assertEquals(cfg.dims(), index.dims());
          assertEquals(metric, index.metric());
          for (Filter f : Filter.values()) {
            long[][] masks = GpuIvfFlatIndexGpuTest.masks(f, N, NQ, r);
            for (int nprobe : new int[] {1, 8, nlist}) {
              Reference[] refs = references(data, pq, queries, nprobe, masks, KS[KS.length - 1]);
              for (int k : KS) {
                for (Path path : cfg.paths()) {
                  String what = metric + " " + cfg + " " + path + " " + f + " nprobe=" + nprobe + " k=" + k;
                  check(what, search(paths.on(path), queries, k, nprobe, f, masks), refs, metric);
                  if (metric == Metric.L2 && nprobe == 1 && f == Filter.NONE
                      && search(paths.on(path), queries, k, nprobe, f, masks).count(0) != 0) {
                    failures.add(what + ": query 0 should probe only its own, empty, list");
                  }
                }
              }
            }
          }
        }
      }
    }
    report("matchesAdcReference");
  }

  /**
   * A table of m = 98 x 256 codewords (100 KB: past the default 48 KB of dynamic shared memory, so the kernel
   * opts in where the device allows, else the tables go to global memory), byte codes (m % 4 != 0), k up to
   * 2048 (the 64-thread bucket, whose warp merge takes 16 KB of static shared memory beside the table), on every
   * path.
   */
  @Test
  void largeTablesAndDeepCandidates() {
    Random r = new Random(37);
    int dims = 196;
    float[] vectors = GpuIvfFlatIndexGpuTest.clustered(N, dims, r);
    for (Metric metric : new Metric[] {Metric.L2, Metric.INNER_PRODUCT}) {
      Data data = GpuIvfFlatIndexGpuTest.lists(vectors, N, dims, metric, r);
      Pq pq = quantize(data, 98, 8, r);
      float[] queries = GpuIvfFlatIndexGpuTest.queries(data, NQ, r);
      try (GpuIvfPqIndex index = upload(pq, data);
           PathIndexes paths = new PathIndexes(d -> upload(d, pq, data))) {
        try (GpuDevice.Scope s = device.lock()) {
          System.out.println("[gpu-vectors] IVF-PQ m=98 bits=8: full table in shared memory for k=10 "
              + index.tableInShared(10) + ", k=2048 " + index.tableInShared(2048) + " (" + index.sharedBytes(true)
              + " bytes); precomputed-table probes per block, 30 / 1000 queries, k=10: "
              + index.probesPerBlock(NQ, 8, 10) + " / " + index.probesPerBlock(1000, 8, 10) + ", k=2048: "
              + index.probesPerBlock(NQ, 8, 2048) + " / " + index.probesPerBlock(1000, 8, 2048));
          // a 100 KB query table fits the shared memory of an A100 / H100 block (163 / 227 KB), not of an sm_86 one
          if (index.tableScanSharedBytes(8) <= device.module().maxDynamicSharedBytes("gv_ivf_pq_table_scan_k64")) {
            assertEquals(8, index.probesPerBlock(1000, 8, 10), "large batches: a block per query");
            assertEquals(1, index.probesPerBlock(NQ, 8, 10), "small batches: a block per (query, list)");
            assertTrue(index.keysRowWidth(NQ, 8) > 0, "small batches: the keys scan by default");
            assertEquals(0, index.keysRowWidth(1000, 8), "large batches: the queues");
          }
        }
        for (Filter f : new Filter[] {Filter.NONE, Filter.PER_QUERY}) {
          long[][] masks = GpuIvfFlatIndexGpuTest.masks(f, N, NQ, r);
          Reference[] refs = references(data, pq, queries, 8, masks, 2048);
          for (int k : new int[] {10, 400, 2048}) {
            for (Path path : Path.values()) {
              String what = metric + " m=98 " + f + " nprobe=8 k=" + k + " " + path;
              check(what, search(paths.on(path), queries, k, 8, f, masks), refs, metric);
            }
          }
        }
      }
    }
    report("largeTablesAndDeepCandidates");
  }

  /**
   * A large batch (600 queries: past {@link IvfConfig#groupedMinQueries}, so the default path is the
   * precomputed tables with one block per query, several 16-query table blocks and one per sub-quantizer) with
   * codes of m = 30 bytes (two 16-byte chunks, the second zero-padded past byte 14: the checked sub-codes),
   * L2 and cosine, no filter and per-query masks, k = 10 and 400; the same batch on the full-table path.
   */
  @Test
  void largeBatchScansEachQueryInOneBlock() {
    Random r = new Random(47);
    int dims = 60;
    int nq = 600;
    float[] vectors = GpuIvfFlatIndexGpuTest.clustered(N, dims, r);
    for (Metric metric : new Metric[] {Metric.L2, Metric.COSINE}) {
      Data data = GpuIvfFlatIndexGpuTest.lists(vectors, N, dims, metric, r);
      Pq pq = quantize(data, 30, 8, r);
      float[] queries = GpuIvfFlatIndexGpuTest.queries(data, nq, r);
      try (GpuIvfPqIndex index = upload(pq, data);
           PathIndexes paths = new PathIndexes(d -> upload(d, pq, data))) {
        assertEquals(expectedBytes(pq, data), index.deviceBytes());
        try (GpuDevice.Scope s = device.lock()) {
          assertEquals(8, index.probesPerBlock(nq, 8, 10), "the default path of a large batch: a block per query");
          assertEquals(8, index.probesPerBlock(nq, 8, 400));
        }
        for (Filter f : new Filter[] {Filter.NONE, Filter.PER_QUERY}) {
          long[][] masks = GpuIvfFlatIndexGpuTest.masks(f, N, nq, r);
          Reference[] refs = references(data, pq, queries, 8, masks, 400);
          for (int k : new int[] {10, 400}) {
            String what = metric + " m=30 " + nq + " queries " + f + " nprobe=8 k=" + k;
            check(what + " default path", search(index, queries, k, 8, f, masks), refs, metric);
            check(what + " full tables", search(paths.on(Path.FULL_SHARED), queries, k, 8, f, masks), refs, metric);
          }
        }
      }
    }
    report("largeBatchScansEachQueryInOneBlock");
  }

  /** A flat, an IVF-Flat and two IVF-PQ groups (per-query and shared masks) in one BatchSearch pass. */
  @Test
  void batchMixesFlatIvfFlatAndIvfPqGroups() throws Exception {
    Random r = new Random(41);
    int dims = 48;
    float[] vectors = GpuIvfFlatIndexGpuTest.clustered(N, dims, r);
    Data l2 = GpuIvfFlatIndexGpuTest.lists(vectors, N, dims, Metric.L2, r);
    Data ip = GpuIvfFlatIndexGpuTest.lists(vectors, N, dims, Metric.INNER_PRODUCT, r);
    Data cosine = GpuIvfFlatIndexGpuTest.lists(vectors, N, dims, Metric.COSINE, r);
    Pq pqL2 = quantize(l2, 12, 8, r);
    Pq pqCos = quantize(cosine, 6, 4, r);
    float[] queries = GpuIvfFlatIndexGpuTest.queries(l2, NQ, r);
    long[][] shared = GpuIvfFlatIndexGpuTest.masks(Filter.SHARED, N, NQ, r);
    long[][] perQuery = GpuIvfFlatIndexGpuTest.masks(Filter.PER_QUERY, N, NQ, r);
    long[][] none = GpuIvfFlatIndexGpuTest.masks(Filter.NONE, N, NQ, r);
    int nlist = l2.lists().nlist();
    try (GpuFlatIndex flat = GpuFlatIndex.upload(device, vectors, N, dims, Metric.L2);
         GpuIvfFlatIndex ivfFlat = GpuIvfFlatIndex.upload(device, ip.lists(), dims, Metric.INNER_PRODUCT,
             ip.rowsInListOrder());
         GpuIvfPqIndex ivfPqL2 = upload(pqL2, l2);
         GpuIvfPqIndex ivfPqCos = upload(pqCos, cosine)) {
      SearchResult[] res = BatchSearch.run(device, List.of(
          new SearchGroup(flat, queries, NQ, 10, shared[0], null),
          new SearchGroup(ivfPqL2, queries, NQ, 100, new SearchParams.Ivf(8), null, perQuery),
          new SearchGroup(ivfFlat, queries, NQ, 100, new SearchParams.Ivf(8), shared[0], null),
          new SearchGroup(ivfPqCos, queries, NQ, 400, new SearchParams.Ivf(nlist), shared[0], null),
          new SearchGroup(ivfPqL2, queries, NQ, 10, new SearchParams.Ivf(nlist), null, null)));
      String f = GpuFlatIndexGpuTest.compare(res[0], vectors, N, dims, Metric.L2, queries, NQ, 10, shared[0]);
      if (f != null) {
        failures.add("flat group: " + f);
      }
      check("IVF-PQ L2 per-query masks", res[1], references(l2, pqL2, queries, 8, perQuery, 100), Metric.L2);
      for (int q = 0; q < NQ; q++) {
        cases++;
        GpuIvfFlatIndexGpuTest.Reference ref = GpuIvfFlatIndexGpuTest.reference(ip, queries, q, 8, 100, shared[q]);
        if (ref == null) {
          ambiguous++;
          continue;
        }
        int[] ids = new int[100];
        float[] values = new float[100];
        for (int i = 0; i < 100; i++) {
          ids[i] = res[2].id(q, i);
          values[i] = res[2].distance(q, i);
        }
        String g = CpuOracle.compare(ref.best(), ids, values, 0, 100,
            GpuIvfFlatIndexGpuTest.probedTruth(ip, queries, q, shared[q], ref.probed()));
        if (g != null) {
          failures.add("IVF-Flat group query " + q + ": " + g);
        }
      }
      check("IVF-PQ cosine shared mask all lists", res[3], references(cosine, pqCos, queries, nlist, shared, 400),
          Metric.COSINE);
      check("IVF-PQ L2 all lists", res[4], references(l2, pqL2, queries, nlist, none, 10), Metric.L2);
    }
    report("batchMixesFlatIvfFlatAndIvfPqGroups");
  }

  @Test
  void badArgumentsAndCloseAreHandled() {
    Random r = new Random(43);
    int dims = 8;
    float[] vectors = GpuIvfFlatIndexGpuTest.clustered(2000, dims, r);
    Data data = GpuIvfFlatIndexGpuTest.lists(vectors, 2000, dims, Metric.L2, r);
    Pq pq = quantize(data, 4, 4, r);
    assertThrows(IllegalArgumentException.class,
        () -> GpuIvfPqIndex.upload(device, pq.lists(), pq.book(), pq.codes(), dims + 1, Metric.L2));
    PqCodebook wrongDims = new PqCodebook(4, 4, 3, new float[4 * 16 * 3]);
    assertThrows(IllegalArgumentException.class,
        () -> GpuIvfPqIndex.upload(device, pq.lists(), wrongDims, pq.codes(), dims, Metric.L2));
    assertThrows(IllegalArgumentException.class, () -> GpuIvfPqIndex.upload(device, pq.lists(), pq.book(),
        Arrays.copyOf(pq.codes(), pq.codes().length - 1), dims, Metric.L2));
    byte[] outOfRange = pq.codes().clone();
    outOfRange[17] = 16; // bits 4: codewords 0..15
    assertThrows(IllegalArgumentException.class,
        () -> GpuIvfPqIndex.upload(device, pq.lists(), pq.book(), outOfRange, dims, Metric.L2));
    assertEquals(0, device.bytesInUse(), "refused uploads hold no device memory");
    GpuIvfPqIndex index = upload(pq, data);
    float[] q = Arrays.copyOf(vectors, dims);
    assertThrows(IllegalArgumentException.class, () -> index.search(q, 1, 10, 0, null));
    assertThrows(IllegalArgumentException.class, () -> index.search(q, 1, 0, 4, null));
    assertThrows(IllegalArgumentException.class, () -> index.search(q, 1, 2049, 4, null));
    assertThrows(IllegalArgumentException.class, () -> index.search(q, 1, 10, 4, new long[1]));
    assertEquals(10, index.search(q, 1, 10, data.lists().nlist(), null).count(0));
    index.close();
    index.close();
    assertThrows(IllegalStateException.class, () -> index.search(q, 1, 10, 4, null));
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  /** The raw vectors by ordinal, for an index that re-ranks on the device. */
  public static GpuIvfPqIndex uploadWithRawVectors(Pq pq, Data data, int rerankFactor) {
    return uploadWithRawVectors(device, pq, data, rerankFactor);
  }

  /** As {@link #uploadWithRawVectors(Pq, Data, int)}, on device {@code d}. */
  public static GpuIvfPqIndex uploadWithRawVectors(GpuDevice d, Pq pq, Data data, int rerankFactor) {
    int dims = data.dims();
    try {
      return GpuIvfPqIndex.upload(d, pq.lists(), pq.book(), pq.codes(), dims, data.metric(),
          (first, count, dst) -> System.arraycopy(data.vectors(), first * dims, dst, 0, count * dims), rerankFactor);
    } catch (java.io.IOException e) {
      throw new AssertionError("copying from an array does no I/O", e);
    }
  }

  /**
   * The exact FP32 key of ordinal {@code ord} against query q as gv_rerank_exact computes it (squared L2, or the
   * inner product of the vectors as searched: normalised in float for cosine), in double: [value, tolerance].
   * Tolerance: the float differences, products and the sum of dims terms (fmaf, any order) err by at most
   * (dims + 8) u of the sum of the terms' magnitudes.
   */
  private static double[] exactKey(float[] x, float[] searched, int ord, int q, int dims, Metric metric) {
    double value = 0;
    double magnitude = 0;
    for (int d = 0; d < dims; d++) {
      double a = x[ord * dims + d];
      double b = searched[q * dims + d];
      if (metric == Metric.L2) {
        value += (a - b) * (a - b);
        magnitude += (Math.abs(a) + Math.abs(b)) * (Math.abs(a) + Math.abs(b));
      } else {
        value += a * b;
        magnitude += Math.abs(a * b);
      }
    }
    return new double[] {value, (dims + 8.0) * CpuOracle.U32 * magnitude};
  }

  /**
   * Checks a device re-rank for k against the reference: the ADC candidates of query q are its {@code kc} best by
   * the reference's approximate values (an ordinal within tolerance of the kc-th value may or may not be one: a
   * near-tie; one clearly past it may not), and the result must be their k best by exact key: count min(k,
   * candidates), every id a candidate (sure or near-tie), distinct, its value the exact key (within tolerance),
   * best first, and no sure candidate left out that is clearly better than the k-th returned.
   */
  private void checkReranked(String what, SearchResult res, Reference[] refs, int k, int kc, Data data,
                             float[] searchedVectors, float[] searchedQueries) {
    Metric metric = data.metric();
    boolean l2 = metric == Metric.L2;
    int dims = data.dims();
    for (int q = 0; q < refs.length; q++) {
      cases++;
      Reference ref = refs[q];
      if (ref == null) {
        ambiguous++;
        continue;
      }
      String at = what + " query " + q;
      List<CpuOracle.Entry> best = ref.best().subList(0, Math.min(kc, ref.best().size()));
      boolean full = best.size() == kc; // else every accepted vector of the probed lists is a candidate
      // Sure candidates: certainly better (by the device's approximate values, each within its tolerance of the
      // reference's) than every ordinal outside the reference's kc; possible ones: the rest that might be.
      java.util.Set<Integer> bestIds = new java.util.HashSet<>();
      double worstIn = l2 ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY; // the weakest a best one can look
      for (CpuOracle.Entry e : best) {
        bestIds.add(e.id());
        double t = ref.tolerance()[e.id()];
        worstIn = l2 ? Math.max(worstIn, e.value() + t) : Math.min(worstIn, e.value() - t);
      }
      double bestOut = l2 ? Double.POSITIVE_INFINITY : Double.NEGATIVE_INFINITY; // the strongest an outsider can look
      for (int id = 0; id < ref.value().length; id++) {
        double v = ref.value()[id];
        if (!Double.isNaN(v) && !bestIds.contains(id)) {
          double t = ref.tolerance()[id];
          bestOut = l2 ? Math.min(bestOut, v - t) : Math.max(bestOut, v + t);
        }
      }
      java.util.Set<Integer> sure = new java.util.HashSet<>();
      for (CpuOracle.Entry e : best) {
        double t = ref.tolerance()[e.id()];
        if (!full || (l2 ? e.value() + t < bestOut : e.value() - t > bestOut)) {
          sure.add(e.id());
        }
      }
      int expectedCount = Math.min(k, best.size());
      if (res.count(q) != expectedCount) {
        failures.add(at + ": " + res.count(q) + " results, expected " + expectedCount);
        continue;
      }
      java.util.Set<Integer> seen = new java.util.HashSet<>();
      double previous = l2 ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
      double[] last = null;
      for (int i = 0; i < res.count(q); i++) {
        int id = res.id(q, i);
        if (id < 0 || id >= data.n() || !seen.add(id)) {
          failures.add(at + " rank " + i + ": id " + id + " out of range or repeated");
          break;
        }
        double approx = ref.value()[id];
        boolean candidate = bestIds.contains(id) || (full && !Double.isNaN(approx)
            && (l2 ? approx - ref.tolerance()[id] <= worstIn : approx + ref.tolerance()[id] >= worstIn));
        if (!candidate) {
          failures.add(at + " rank " + i + ": id " + id + " (approximate value " + approx + ") is not one of the "
              + kc + " candidates (the weakest of them within tolerance: " + worstIn + ")");
          break;
        }
        double[] key = exactKey(searchedVectors, searchedQueries, id, q, dims, metric);
        float got = res.distance(q, i);
        if (Math.abs(got - key[0]) > key[1] + 1e-30) {
          failures.add(at + " rank " + i + ": id " + id + " value " + got + ", exact " + key[0] + " +- " + key[1]);
          break;
        }
        if (l2 ? got < previous : got > previous) {
          failures.add(at + " rank " + i + ": not best first (" + got + " after " + previous + ")");
          break;
        }
        previous = got;
        last = key;
      }
      if (last == null || res.count(q) < k) {
        for (int id : sure) {
          if (!seen.contains(id)) {
            failures.add(at + ": candidate " + id + " missing from " + res.count(q) + " results (k = " + k + ")");
            break;
          }
        }
        continue;
      }
      for (int id : sure) {
        if (seen.contains(id)) {
          continue;
        }
        double[] key = exactKey(searchedVectors, searchedQueries, id, q, dims, metric);
        double margin = key[1] + last[1];
        if (l2 ? key[0] < previous - margin : key[0] > previous + margin) {
          failures.add(at + ": candidate " + id + " (exact " + key[0] + ") left out, better than the k-th returned "
              + previous);
          break;
        }
      }
    }
  }

  /**
   * The device re-rank (raw vectors resident, 4 x k ADC candidates) against the reference's candidates re-ranked
   * exactly on the CPU ({@link #checkReranked}): every metric and filter, nprobe 8 and nlist, k = 1, 10, 100 and
   * 600 (candidates capped at 2,048), batches of 30 (both precomputed-table paths) and of 1; device bytes count the
   * raw vectors. Then the "host path" of the same index ({@link IvfConfig#skipDeviceRerank}: its 4 x k ADC
   * candidates) re-ranked on the CPU in double gives the same ids and values up to near-ties: the device does what
   * the codec's host re-rank did.
   */
  @Test
  void deviceRerankIsTheExactTopKOfTheAdcCandidates() {
    Random r = new Random(53);
    int dims = 64;
    float[] vectors = GpuIvfFlatIndexGpuTest.clustered(N, dims, r);
    for (Metric metric : Metric.values()) {
      Data data = GpuIvfFlatIndexGpuTest.lists(vectors, N, dims, metric, r);
      Pq pq = quantize(data, 16, 8, r);
      float[] queries = GpuIvfFlatIndexGpuTest.queries(data, NQ, r);
      float[] searchedVectors = asSearched(data.vectors(), N, dims, metric);
      float[] searchedQueries = asSearched(queries, NQ, dims, metric);
      int nlist = data.lists().nlist();
      try (GpuIvfPqIndex index = uploadWithRawVectors(pq, data, 4);
           PathIndexes paths = new PathIndexes(d -> uploadWithRawVectors(d, pq, data, 4));
           GpuIvfPqIndex hostPath = uploadWithRawVectors(deviceWith(IvfConfig.defaults().withSkipDeviceRerank(true)),
               pq, data, 4)) {
        assertTrue(index.reranksOnDevice());
        assertEquals(4, index.rerankFactor());
        assertEquals(40, index.candidates(10));
        assertEquals(KSelect.MAX_K, index.candidates(600));
        assertEquals(expectedBytes(pq, data) + 4L * N * dims, index.deviceBytes(), "the raw vectors are counted");
        assertEquals(4L * N * dims, index.deviceBytesByPart().get(org.gpuvectors.cuda.MemoryPart.VECTORS), "as vectors");
        for (Filter f : Filter.values()) {
          long[][] masks = GpuIvfFlatIndexGpuTest.masks(f, N, NQ, r);
          for (int nprobe : new int[] {8, nlist}) {
            Reference[] refs = references(data, pq, queries, nprobe, masks, KSelect.MAX_K);
            for (int k : new int[] {1, 10, 100, 600}) {
              int kc = index.candidates(k);
              for (Path path : new Path[] {Path.PRECOMPUTED_PER_PAIR, Path.PRECOMPUTED_PER_QUERY,
                  Path.PRECOMPUTED_KEYS, Path.PRECOMPUTED_KEYS_BATCH}) {
                String what = "rerank " + metric + " " + path + " " + f + " nprobe=" + nprobe + " k=" + k;
                checkReranked(what, search(paths.on(path), queries, k, nprobe, f, masks), refs, k, kc, data,
                    searchedVectors, searchedQueries);
              }
              // batch 1: query 2 alone (its own mask for per-query filters)
              SearchResult one = index.search(Arrays.copyOfRange(queries, 2 * dims, 3 * dims), 1, k, nprobe, masks[2]);
              checkReranked("rerank " + metric + " batch 1 " + f + " nprobe=" + nprobe + " k=" + k, one,
                  new Reference[] {refs[2]}, k, kc, data, searchedVectors,
                  Arrays.copyOfRange(searchedQueries, 2 * dims, 3 * dims));
              if (nprobe == 8 && (k == 10 || k == 100)) {
                sameAsHostRerank("host " + metric + " " + f + " k=" + k, index, hostPath, queries, k, nprobe, f,
                    masks, data, searchedVectors, searchedQueries);
              }
            }
          }
        }
      }
    }
    report("deviceRerankIsTheExactTopKOfTheAdcCandidates");
  }

  /**
   * Several segments in one pass (BatchSearch), a query or five each: the small ivf_pq groups with the device
   * re-rank share one candidate selection ({@link SharedKeySelection}: counted by the device), and each group's
   * result is still the exact top k of its own ADC candidates ({@link #checkReranked}), per-query and shared masks
   * included; their coarse steps in one table launch, or (one case, on a device with {@link IvfConfig#coarseAlone})
   * one by one. A segment of another re-rank depth and a flat segment in the same pass search alone and stay exact.
   */
  @Test
  void segmentsShareOneSelection() {
    Random r = new Random(67);
    int dims = 32;
    // [0]: the shared device; [1]: a device whose shared selections' members run their coarse steps one by one
    GpuDevice[] devices = {device, deviceWith(IvfConfig.defaults().withCoarseAlone(true))};
    for (Metric metric : new Metric[] {Metric.L2, Metric.COSINE}) {
      int[] sizes = {N, N / 2, N / 5, N / 3};
      Data[] data = new Data[sizes.length];
      Pq[] pq = new Pq[sizes.length];
      GpuIvfPqIndex[][] indexes = new GpuIvfPqIndex[devices.length][sizes.length];
      GpuFlatIndex[] flats = new GpuFlatIndex[devices.length];
      float[] flatVectors = GpuIvfFlatIndexGpuTest.clustered(N / 4, dims, r);
      try {
        for (int v = 0; v < devices.length; v++) {
          flats[v] = GpuFlatIndex.upload(devices[v], flatVectors, N / 4, dims, metric);
        }
        for (int s = 0; s < sizes.length; s++) {
          data[s] = GpuIvfFlatIndexGpuTest.lists(GpuIvfFlatIndexGpuTest.clustered(sizes[s], dims, r), sizes[s], dims,
              metric, r);
          pq[s] = quantize(data[s], 8, 8, r);
          for (int v = 0; v < devices.length; v++) { // the last: another depth
            indexes[v][s] = uploadWithRawVectors(devices[v], pq[s], data[s], s == sizes.length - 1 ? 8 : 4);
          }
        }
        for (int nq : new int[] {1, 5}) {
          for (int k : new int[] {10, 100}) {
            float[] queries = GpuIvfFlatIndexGpuTest.queries(data[0], nq, r);
            float[] searchedQueries = asSearched(queries, nq, dims, metric);
            int v = nq == 5 && k == 10 ? 1 : 0; // the members' coarse steps one by one, not in one table launch
            GpuIvfPqIndex[] index = indexes[v];
            List<SearchGroup> groups = new ArrayList<>();
            long[][][] masks = new long[sizes.length][][];
            for (int s = 0; s < sizes.length; s++) {
              Filter f = Filter.values()[s % Filter.values().length];
              masks[s] = GpuIvfFlatIndexGpuTest.masks(f, sizes[s], nq, r);
              groups.add(f == Filter.SHARED ? new SearchGroup(index[s], queries, nq, k, new SearchParams.Ivf(8), masks[s][0], null)
                  : new SearchGroup(index[s], queries, nq, k, new SearchParams.Ivf(8), null, f == Filter.PER_QUERY ? masks[s] : null));
            }
            groups.add(new SearchGroup(flats[v], queries, nq, k, null, null));
            long before = PassCounters.of(devices[v]).sharedSelections();
            SearchResult[] res = BatchSearch.run(devices[v], groups);
            assertEquals(before + 1, PassCounters.of(devices[v]).sharedSelections(), "the segments of one depth shared a selection");
            for (int s = 0; s < sizes.length; s++) {
              long[][] rowMasks = new long[nq][];
              for (int q = 0; q < nq; q++) {
                rowMasks[q] = groups.get(s).sharedMask() != null ? masks[s][0]
                    : groups.get(s).queryMasks() != null ? masks[s][q] : null;
              }
              int kc = index[s].candidates(k);
              checkReranked(metric + " segment " + s + " nq=" + nq + " k=" + k, res[s],
                  references(data[s], pq[s], queries, 8, rowMasks, kc), k, kc, data[s],
                  asSearched(data[s].vectors(), sizes[s], dims, metric), searchedQueries);
            }
            String f = GpuFlatIndexGpuTest.compare(res[sizes.length], flatVectors, N / 4, dims, metric, queries, nq, k,
                null);
            if (f != null) {
              failures.add(metric + " flat segment nq=" + nq + " k=" + k + ": " + f);
            }
          }
        }
      } finally {
        for (GpuIvfPqIndex[] onDevice : indexes) {
          for (GpuIvfPqIndex i : onDevice) {
            if (i != null) {
              i.close();
            }
          }
        }
        for (GpuFlatIndex flat : flats) {
          if (flat != null) {
            flat.close();
          }
        }
      }
    }
    report("segmentsShareOneSelection");
  }

  /**
   * A large batch (600 queries: the per-query table scan) re-ranked on the device, L2 and cosine, no filter and
   * per-query masks, k = 10: as {@link #checkReranked}; then a batch of 2,100 queries at k = 512 (2,048 candidates
   * each) re-ranked in two blocks (a block is {@code 2^22} candidate slots: 2,048 queries of
   * 2,048), checked the same way.
   */
  @Test
  void largeBatchesRerankOnTheDevice() {
    Random r = new Random(59);
    int dims = 32;
    float[] vectors = GpuIvfFlatIndexGpuTest.clustered(N, dims, r);
    for (Metric metric : new Metric[] {Metric.L2, Metric.COSINE}) {
      Data data = GpuIvfFlatIndexGpuTest.lists(vectors, N, dims, metric, r);
      Pq pq = quantize(data, 8, 8, r);
      try (GpuIvfPqIndex index = uploadWithRawVectors(pq, data, 4)) {
        for (int nq : new int[] {600, 2100}) {
          int k = nq == 600 ? 10 : 512;
          float[] queries = GpuIvfFlatIndexGpuTest.queries(data, nq, r);
          float[] searchedQueries = asSearched(queries, nq, dims, metric);
          float[] searchedVectors = asSearched(data.vectors(), N, dims, metric);
          for (Filter f : new Filter[] {Filter.NONE, Filter.PER_QUERY}) {
            long[][] masks = GpuIvfFlatIndexGpuTest.masks(f, N, nq, r);
            Reference[] refs = references(data, pq, queries, 8, masks, index.candidates(k));
            SearchResult res = f == Filter.PER_QUERY
                ? BatchSearch.run(device, List.of(new SearchGroup(index, queries, nq, k, new SearchParams.Ivf(8), null, masks)))[0]
                : index.search(queries, nq, k, 8, null);
            checkReranked("rerank " + metric + " " + nq + " queries " + f + " k=" + k, res, refs, k,
                index.candidates(k), data, searchedVectors, searchedQueries);
          }
        }
      }
    }
    report("largeBatchesRerankOnTheDevice");
  }

  /**
   * The device re-rank equals the host re-rank of the same index's ADC candidates ({@code hostPath}: the same index
   * on a device with {@link IvfConfig#skipDeviceRerank}: 4 x k of them, exact keys in double here, best first, ties by
   * ordinal): the same values rank by rank (within the keys' tolerance), and the same ids except where two exact keys
   * are within tolerance of each other at the k-th place.
   */
  private void sameAsHostRerank(String what, GpuIvfPqIndex index, GpuIvfPqIndex hostPath, float[] queries, int k,
                                int nprobe, Filter f, long[][] masks, Data data, float[] searchedVectors,
                                float[] searchedQueries) {
    int kc = index.candidates(k);
    SearchResult device = search(index, queries, k, nprobe, f, masks);
    SearchResult candidates = search(hostPath, queries, kc, nprobe, f, masks);
    Metric metric = data.metric();
    for (int q = 0; q < device.numQueries(); q++) {
      cases++;
      List<double[]> host = new ArrayList<>(); // {key, tolerance, ordinal}
      for (int i = 0; i < candidates.count(q); i++) {
        int ord = candidates.id(q, i);
        double[] key = exactKey(searchedVectors, searchedQueries, ord, q, data.dims(), metric);
        host.add(new double[] {key[0], key[1], ord});
      }
      Comparator<double[]> byKey = Comparator.comparingDouble(e -> e[0]);
      host.sort((metric == Metric.L2 ? byKey : byKey.reversed()).thenComparingDouble(e -> e[2]));
      int count = Math.min(k, host.size());
      String at = what + " query " + q;
      if (device.count(q) != count) {
        failures.add(at + ": " + device.count(q) + " results, the host re-rank " + count);
        continue;
      }
      java.util.Set<Integer> hostIds = new java.util.HashSet<>();
      java.util.Set<Integer> deviceIds = new java.util.HashSet<>();
      for (int i = 0; i < count; i++) {
        double[] h = host.get(i);
        if (Math.abs(device.distance(q, i) - h[0]) > 2 * h[1] + 1e-30) {
          failures.add(at + " rank " + i + ": device value " + device.distance(q, i) + ", host " + h[0]);
          break;
        }
        hostIds.add((int) h[2]);
        deviceIds.add(device.id(q, i));
      }
      if (!hostIds.equals(deviceIds) && count > 0) {
        // only ids tied (within tolerance) with the k-th may differ
        double[] kth = host.get(count - 1);
        for (int i = 0; i < count; i++) {
          double[] h = host.get(i);
          if (!deviceIds.contains((int) h[2]) && Math.abs(h[0] - kth[0]) > h[1] + kth[1]) {
            failures.add(at + ": ordinal " + (int) h[2] + " of the host re-rank missing on the device");
            break;
          }
        }
      }
    }
  }

  /** Fails with the first failures; skipped (coarse near-tie) queries must stay rare (at most 2 %). */
  private void report(String test) {
    System.out.println("[gpu-vectors] IVF-PQ " + test + ": " + cases + " query checks, " + ambiguous
        + " skipped as coarse near-ties, " + failures.size() + " failures");
    assertNull(failures.isEmpty() ? null : failures.size() + " failures, first: " + failures.subList(0,
        Math.min(5, failures.size())));
    assertTrue(ambiguous * 50L <= cases, "too many coarse near-ties to check: " + ambiguous + " of " + cases);
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
    for (GpuDevice d : DEVICES.values()) {
      assertEquals(0, d.bytesInUse(), "all device buffers returned to the pool (" + d.config().ivf() + ")");
    }
  }
}
