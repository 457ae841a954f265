package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * IVF-Flat search on the GPU against a CPU reference IVF search written here (coarse: the nprobe
 * nearest centroids by the index's metric, in double; then an exact scan of those lists), and with
 * nprobe >= nlist against exact search (CpuOracle, and GpuFlatIndex's results). Clustered data, lists
 * built here by nearest-centroid assignment with centroids drawn from the data; the last
 * {@link #EMPTY_LISTS} centroids get no vectors, so probed lists can be empty. Skips without a GPU.
 *
 * <p>Ties: results are checked with {@link CpuOracle#compare} (id sets equal up to float32
 * near-ties). A query whose nprobe-th and next centroid are a near-tie could honestly probe either
 * list on the GPU: its reference is not defined, so it is counted and skipped (there must be few).
 */
class GpuIvfFlatIndexGpuTest extends GpuTestCase {
  private static final int N = 20_000;
  private static final int NLIST = 64;
  private static final int EMPTY_LISTS = 4;
  private static final int CLUSTERS = 64;
  private static final int NQ = 30;
  private static final int[] KS = {1, 10, 100, 300};
  /** The references hold this many best: a smaller k checks against a prefix. */
  private static final int KMAX = 300;
  /** nprobe > nlist (capped: every list), = nlist, and fewer. */
  private static final int[] NPROBES = {NLIST + 36, NLIST, 8, 1};

  /** Which vectors the queries may return. */
  private enum Filter { NONE, SHARED, SPARSE, PER_QUERY }

  private final List<String> failures = new ArrayList<>();
  private int cases;
  private int ambiguous;

  /** Vectors by ordinal, their lists, and each ordinal's list. */
  private record Data(float[] vectors, int n, int dims, Metric metric, IvfLists lists, int[] listOf) {
    /** Row p = the vector of ordinal ords[p]. */
    GpuFlatIndex.RowSource rowsInListOrder() {
      return (first, count, dst) -> {
        for (int i = 0; i < count; i++) {
          System.arraycopy(vectors, lists.ords()[first + i] * dims, dst, i * dims, dims);
        }
      };
    }

    float[] centroid(int list) {
      float[] c = new float[dims];
      System.arraycopy(lists.centroids(), list * dims, c, 0, dims);
      return c;
    }
  }

  /** Gaussian clusters: CLUSTERS centres of spread 4, unit noise around them. */
  static float[] clustered(int n, int dims, Random r) {
    float[] centres = new float[CLUSTERS * dims];
    for (int i = 0; i < centres.length; i++) {
      centres[i] = 4 * (float) r.nextGaussian();
    }
    float[] x = new float[n * dims];
    for (int i = 0; i < n; i++) {
      int c = r.nextInt(CLUSTERS);
      for (int d = 0; d < dims; d++) {
        x[i * dims + d] = centres[c * dims + d] + (float) r.nextGaussian();
      }
    }
    return x;
  }

  /**
   * NLIST centroids drawn from the data; every vector goes to its nearest centroid by the metric among
   * the first NLIST - EMPTY_LISTS (the others stay empty); positions shuffled inside each list, so
   * that positions and ordinals differ everywhere.
   */
  static Data lists(float[] vectors, int n, int dims, Metric m, Random r) {
    float[] centroids = new float[NLIST * dims];
    Set<Integer> drawn = new HashSet<>();
    for (int l = 0; l < NLIST; l++) {
      int p;
      do {
        p = r.nextInt(n);
      } while (!drawn.add(p));
      System.arraycopy(vectors, p * dims, centroids, l * dims, dims);
    }
    int[] listOf = new int[n];
    int[] sizes = new int[NLIST];
    for (int i = 0; i < n; i++) {
      int best = -1;
      double bestValue = 0;
      for (int l = 0; l < NLIST - EMPTY_LISTS; l++) {
        double v = CpuOracle.distance(vectors, i * dims, centroids, l * dims, dims, m);
        if (best < 0 || (m.largestFirst() ? v > bestValue : v < bestValue)) {
          best = l;
          bestValue = v;
        }
      }
      listOf[i] = best;
      sizes[best]++;
    }
    int[] offsets = new int[NLIST + 1];
    for (int l = 0; l < NLIST; l++) {
      offsets[l + 1] = offsets[l] + sizes[l];
    }
    int[] fill = offsets.clone();
    int[] ords = new int[n];
    for (int i = 0; i < n; i++) {
      ords[fill[listOf[i]]++] = i;
    }
    for (int l = 0; l < NLIST; l++) {
      for (int p = offsets[l + 1] - 1; p > offsets[l]; p--) {
        int o = offsets[l] + r.nextInt(p - offsets[l] + 1);
        int t = ords[p];
        ords[p] = ords[o];
        ords[o] = t;
      }
    }
    return new Data(vectors, n, dims, m, new IvfLists(NLIST, centroids, offsets, ords), listOf);
  }

  /** NQ queries near data points; query 0 is the centroid of an empty list (its own nearest, for L2). */
  static float[] queries(Data data, Random r) {
    float[] q = new float[NQ * data.dims()];
    System.arraycopy(data.centroid(NLIST - EMPTY_LISTS), 0, q, 0, data.dims());
    for (int i = 1; i < NQ; i++) {
      int p = r.nextInt(data.n());
      for (int d = 0; d < data.dims(); d++) {
        q[i * data.dims() + d] = data.vectors()[p * data.dims() + d] + 0.5f * (float) r.nextGaussian();
      }
    }
    return q;
  }

  /** Per query its accept mask (null = all); SHARED and SPARSE: one array for every query. */
  static long[][] masks(Filter f, int n, Random r) {
    long[][] masks = new long[NQ][];
    long[] shared = switch (f) {
      case NONE, PER_QUERY -> null;
      case SHARED -> GpuFlatIndexGpuTest.bits(n, 0.3, r);
      case SPARSE -> GpuFlatIndexGpuTest.bits(n, 5.0 / n, r); // fewer accepted than k: empty slots
    };
    for (int q = 0; q < NQ; q++) {
      masks[q] = f == Filter.PER_QUERY && q != 1 ? GpuFlatIndexGpuTest.bits(n, 0.5, r) : shared;
    }
    return masks;
  }

  /** One search of the NQ queries, through the index's convenience method or a BatchSearch group. */
  private static SearchResult search(DeviceIndex index, float[] queries, int k, int nprobe, Filter f, long[][] masks) {
    if (f == Filter.PER_QUERY) {
      return BatchSearch.run(device, List.of(new SearchGroup(index, queries, NQ, k, nprobe, null, masks)))[0];
    }
    return switch (index) {
      case GpuIvfFlatIndex ivf -> ivf.search(queries, NQ, k, nprobe, masks[0]);
      case GpuFlatIndex flat -> flat.search(queries, NQ, k, masks[0]);
      default -> throw new AssertionError(index);
    };
  }

  @Test
  void matchesReferenceAndExactSearch() throws IOException {
    Random r = new Random(17);
    for (int dims : new int[] {64, 37}) {
      float[] vectors = clustered(N, dims, r);
      for (Metric m : Metric.values()) {
        Data data = lists(vectors, N, dims, m, r);
        float[] queries = queries(data, r);
        try (GpuIvfFlatIndex ivf = GpuIvfFlatIndex.upload(device, data.lists(), dims, m, data.rowsInListOrder());
             GpuFlatIndex flat = GpuFlatIndex.upload(device, vectors, N, dims, m)) {
          long centroidBytes = 4L * NLIST * dims + (m == Metric.L2 ? 4L * NLIST : 0);
          assertEquals(centroidBytes + 4L * N * dims + 4L * N + 4L * (NLIST + 1), ivf.deviceBytes());
          assertEquals(N, ivf.size());
          assertEquals(NLIST, ivf.nlist());
          for (Filter f : Filter.values()) {
            long[][] masks = masks(f, N, r);
            for (int nprobe : NPROBES) {
              Reference[] refs = references(data, queries, nprobe, masks);
              for (int k : KS) {
                String what = m + " dims=" + dims + " " + f + " nprobe=" + nprobe + " k=" + k;
                SearchResult res = search(ivf, queries, k, nprobe, f, masks);
                checkAgainstReference(what, res, refs, data, queries, masks);
                if (nprobe >= NLIST) {
                  checkAgainstFlat(what, res, search(flat, queries, k, 1, f, masks), data, queries, k, masks);
                }
                if (m == Metric.L2 && nprobe == 1 && f == Filter.NONE && res.count(0) != 0) {
                  failures.add(what + ": query 0 should probe only its own, empty, list: " + res.count(0) + " results");
                }
              }
            }
          }
        }
      }
    }
    report("matchesReferenceAndExactSearch");
  }

  /** A flat group and IVF groups (shared, per-query and no masks) in one BatchSearch pass. */
  @Test
  void batchMixesFlatAndIvfGroups() throws IOException {
    Random r = new Random(23);
    int dims = 37;
    float[] vectors = clustered(N, dims, r);
    Data l2 = lists(vectors, N, dims, Metric.L2, r);
    Data cosine = lists(vectors, N, dims, Metric.COSINE, r);
    float[] queries = queries(l2, r);
    long[][] shared = masks(Filter.SHARED, N, r);
    long[][] perQuery = masks(Filter.PER_QUERY, N, r);
    long[][] none = masks(Filter.NONE, N, r);
    try (GpuFlatIndex flat = GpuFlatIndex.upload(device, vectors, N, dims, Metric.L2);
         GpuIvfFlatIndex ivfL2 = GpuIvfFlatIndex.upload(device, l2.lists(), dims, Metric.L2, l2.rowsInListOrder());
         GpuIvfFlatIndex ivfCos = GpuIvfFlatIndex.upload(device, cosine.lists(), dims, Metric.COSINE,
             cosine.rowsInListOrder())) {
      SearchResult[] res = BatchSearch.run(device, List.of(
          new SearchGroup(flat, queries, NQ, 10, shared[0], null),
          new SearchGroup(ivfL2, queries, NQ, 100, 8, null, perQuery),
          new SearchGroup(ivfCos, queries, NQ, 300, 2, null, null),
          new SearchGroup(ivfL2, queries, NQ, 10, NLIST, shared[0], null)));
      String f = GpuFlatIndexGpuTest.compare(res[0], vectors, N, dims, Metric.L2, queries, NQ, 10, shared[0]);
      if (f != null) {
        failures.add("flat group: " + f);
      }
      checkAgainstReference("IVF L2 per-query masks", res[1], references(l2, queries, 8, perQuery), l2, queries,
          perQuery);
      checkAgainstReference("IVF cosine", res[2], references(cosine, queries, 2, none), cosine, queries, none);
      checkAgainstReference("IVF L2 all lists", res[3], references(l2, queries, NLIST, shared), l2, queries, shared);
      checkAgainstFlat("IVF L2 all lists vs flat group", res[3], res[0], l2, queries, 10, shared);
    }
    report("batchMixesFlatAndIvfGroups");
  }

  @Test
  void badArgumentsAndCloseAreHandled() throws IOException {
    Random r = new Random(5);
    int dims = 8;
    float[] vectors = clustered(2000, dims, r);
    Data data = lists(vectors, 2000, dims, Metric.INNER_PRODUCT, r);
    assertThrows(IllegalArgumentException.class,
        () -> GpuIvfFlatIndex.upload(device, data.lists(), dims + 1, Metric.L2, data.rowsInListOrder()));
    GpuIvfFlatIndex ivf = GpuIvfFlatIndex.upload(device, data.lists(), dims, Metric.INNER_PRODUCT,
        data.rowsInListOrder());
    float[] q = Arrays.copyOf(vectors, dims);
    assertThrows(IllegalArgumentException.class, () -> ivf.search(q, 1, 10, 0, null));
    assertThrows(IllegalArgumentException.class, () -> ivf.search(q, 1, 0, 4, null));
    assertThrows(IllegalArgumentException.class, () -> ivf.search(q, 1, 2049, 4, null));
    assertThrows(IllegalArgumentException.class, () -> ivf.search(q, 1, 10, 4, new long[1]));
    assertEquals(10, ivf.search(q, 1, 10, NLIST, null).count(0));
    ivf.close();
    ivf.close();
    assertThrows(IllegalStateException.class, () -> ivf.search(q, 1, 10, 4, null));

    // the coarse step selects nprobe centroids: more than KSelect.MAX_K lists are refused (capped at nlist)
    int nlist = KSelect.MAX_K + 1;
    int[] offsets = new int[nlist + 1];
    int[] ords = new int[nlist];
    for (int l = 0; l < nlist; l++) {
      offsets[l + 1] = l + 1;
      ords[l] = l;
    }
    float[] points = clustered(nlist, 2, r);
    try (GpuIvfFlatIndex many = GpuIvfFlatIndex.upload(device, new IvfLists(nlist, points, offsets, ords), 2,
        Metric.L2, (first, count, dst) -> System.arraycopy(points, first * 2, dst, 0, count * 2))) {
      assertThrows(IllegalArgumentException.class, () -> many.search(points, 1, 1, nlist, null));
      SearchResult one = many.search(points, 1, 1, KSelect.MAX_K, null);
      assertEquals(0, one.id(0, 0), "a vector is its own nearest");
    }
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  /** The reference IVF search of one query: its KMAX best, and which lists it probed. */
  private record Reference(List<CpuOracle.Entry> best, boolean[] probed) {}

  /** Per query its reference (null: a coarse near-tie), for nprobe and the queries' masks. */
  static Reference[] references(Data data, float[] queries, int nprobe, long[][] masks) {
    Reference[] refs = new Reference[NQ];
    for (int q = 0; q < NQ; q++) {
      refs[q] = reference(data, queries, q, nprobe, KMAX, masks[q]);
    }
    return refs;
  }

  /**
   * Coarse: the min(nprobe, nlist) nearest centroids in double; null when the last probed and the
   * next centroid are a float32 near-tie. Then every accepted vector of those lists, exactly, best
   * first (ties by ordinal), the first k.
   */
  static Reference reference(Data data, float[] queries, int q, int nprobe, int k, long[] accept) {
    int dims = data.dims();
    int probes = Math.min(nprobe, NLIST);
    float[] centroids = data.lists().centroids();
    List<CpuOracle.Entry> order = CpuOracle.search(centroids, NLIST, dims, data.metric(), queries, q, NLIST, null);
    if (probes < NLIST) {
      CpuOracle.Truth coarse = CpuOracle.searchTruth(centroids, NLIST, dims, data.metric(), queries, q, null);
      CpuOracle.Entry last = order.get(probes - 1);
      CpuOracle.Entry next = order.get(probes);
      if (Math.abs(last.value() - next.value()) <= coarse.tolerance(last.id()) + coarse.tolerance(next.id())) {
        return null;
      }
    }
    boolean[] probed = new boolean[NLIST];
    List<CpuOracle.Entry> candidates = new ArrayList<>();
    int[] offsets = data.lists().offsets();
    for (int i = 0; i < probes; i++) {
      int l = order.get(i).id();
      probed[l] = true;
      for (int p = offsets[l]; p < offsets[l + 1]; p++) {
        int ord = data.lists().ords()[p];
        if (CpuOracle.accepted(accept, ord)) {
          candidates.add(new CpuOracle.Entry(ord,
              CpuOracle.distance(data.vectors(), ord * dims, queries, q * dims, dims, data.metric())));
        }
      }
    }
    Comparator<CpuOracle.Entry> byValue = Comparator.comparingDouble(CpuOracle.Entry::value);
    candidates.sort((data.metric().largestFirst() ? byValue.reversed() : byValue)
        .thenComparingInt(CpuOracle.Entry::id));
    return new Reference(candidates.subList(0, Math.min(k, candidates.size())), probed);
  }

  /** Exact values and tolerances of every vector; selectable only when accepted and in a probed list. */
  static CpuOracle.Truth probedTruth(Data data, float[] queries, int q, long[] accept, boolean[] probed) {
    CpuOracle.Truth exact = CpuOracle.searchTruth(data.vectors(), data.n(), data.dims(), data.metric(), queries, q,
        accept);
    return new CpuOracle.Truth() {
      public boolean largestFirst() {
        return exact.largestFirst();
      }

      public boolean selectable(int id) {
        return exact.selectable(id) && probed[data.listOf()[id]];
      }

      public double value(int id) {
        return exact.value(id);
      }

      public double tolerance(int id) {
        return exact.tolerance(id);
      }
    };
  }

  private void checkAgainstReference(String what, SearchResult res, Reference[] refs, Data data, float[] queries,
                                     long[][] masks) {
    int k = res.k();
    int[] ids = ids(res);
    float[] values = values(res);
    for (int q = 0; q < NQ; q++) {
      cases++;
      Reference ref = refs[q];
      if (ref == null) {
        ambiguous++;
        continue;
      }
      List<CpuOracle.Entry> best = ref.best().subList(0, Math.min(k, ref.best().size()));
      String f = CpuOracle.compare(best, ids, values, q * k, k, probedTruth(data, queries, q, masks[q], ref.probed()));
      if (f != null) {
        failures.add(what + " query " + q + ": " + f);
      }
    }
  }

  /** Every list probed: the IVF result must be the exact search's (as GpuFlatIndex found it). */
  private void checkAgainstFlat(String what, SearchResult ivf, SearchResult flat, Data data, float[] queries, int k,
                                long[][] masks) {
    int[] ids = ids(ivf);
    float[] values = values(ivf);
    for (int q = 0; q < NQ; q++) {
      CpuOracle.Truth exact = CpuOracle.searchTruth(data.vectors(), data.n(), data.dims(), data.metric(), queries, q,
          masks[q]);
      List<CpuOracle.Entry> expected = new ArrayList<>();
      for (int i = 0; i < flat.count(q); i++) {
        expected.add(new CpuOracle.Entry(flat.id(q, i), exact.value(flat.id(q, i))));
      }
      Comparator<CpuOracle.Entry> byValue = Comparator.comparingDouble(CpuOracle.Entry::value);
      expected.sort(data.metric().largestFirst() ? byValue.reversed() : byValue);
      String f = CpuOracle.compare(expected, ids, values, q * k, k, exact);
      if (f != null) {
        failures.add(what + " vs flat, query " + q + ": " + f);
      }
    }
  }

  private static int[] ids(SearchResult res) {
    int[] ids = new int[res.numQueries() * res.k()];
    for (int q = 0; q < res.numQueries(); q++) {
      for (int i = 0; i < res.k(); i++) {
        ids[q * res.k() + i] = res.id(q, i);
      }
    }
    return ids;
  }

  private static float[] values(SearchResult res) {
    float[] values = new float[res.numQueries() * res.k()];
    for (int q = 0; q < res.numQueries(); q++) {
      for (int i = 0; i < res.k(); i++) {
        values[q * res.k() + i] = res.distance(q, i);
      }
    }
    return values;
  }

  /** Fails with the first failures; skipped (near-tie) queries must stay rare. */
  private void report(String test) {
    System.out.println("[gpu-vectors] IVF-Flat " + test + ": " + cases + " query checks, " + ambiguous
        + " skipped as coarse near-ties, " + failures.size() + " failures");
    assertNull(failures.isEmpty() ? null : failures.size() + " failures, first: " + failures.subList(0,
        Math.min(5, failures.size())));
    assertTrue(ambiguous * 50 <= cases, "too many coarse near-ties to check: " + ambiguous + " of " + cases);
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }
}
