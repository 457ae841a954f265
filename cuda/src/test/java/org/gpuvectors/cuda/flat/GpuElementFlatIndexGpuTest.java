package org.gpuvectors.cuda.flat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.gpuvectors.cuda.GpuTestCase;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.flat.ElementReference.Hit;
import org.gpuvectors.cuda.flat.GpuElementFlatIndex.Element;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.junit.jupiter.api.Test;

/**
 * Exact search of byte, bit and bfloat16 rows on the GPU ({@link GpuElementFlatIndex}, element_scan.cu) against brute
 * force on the CPU ({@link ElementReference#exact}): every element and metric it takes, rows of several widths (not
 * whole words too), batches of 1 to 70 queries (70: the pass uploads them from their own array), k from 1 to 2,048,
 * shared and per-query accept masks, in passes of their own and mixed with a float index. Each search must have run
 * on the GPU (the index's scanned-query count grows by the batch). Byte and bit results are the oracle's exactly, ids
 * included: their integer distances tie often, and the rows tied at the k-th distance must be the lowest ids (as
 * Lucene keeps the lowest docs; the oracle ranks ties by id). bfloat16 results: each rank's distance the oracle's up to
 * FP32 summation error, distinct accepted ids each at its own distance, and every row strictly better than the k-th.
 * Skips (visibly) without a GPU.
 */
public class GpuElementFlatIndexGpuTest extends GpuTestCase {

  /** One element's data: byte or bit rows, or the floats of bfloat16 rows. */
  private record Data(Element element, byte[] rows, float[] floats, int n, int dims) {
    static Data random(Element element, int n, int dims, Random r) {
      if (element == Element.BFLOAT16) {
        return new Data(element, null, GpuFlatIndexGpuTest.random(n * dims, r), n, dims);
      }
      byte[] b = new byte[n * dims];
      // byte rows of a narrow range (many near and tied distances, as quantised embeddings have), with extremes
      for (int i = 0; i < b.length; i++) {
        b[i] = element == Element.BIT || r.nextInt(8) == 0 ? (byte) r.nextInt(256) : (byte) (r.nextInt(31) - 15);
      }
      return new Data(element, b, null, n, dims);
    }

    GpuElementFlatIndex upload(Metric metric) {
      return element == Element.BFLOAT16 ? GpuElementFlatIndex.uploadBf16(device, floats, n, dims, metric)
          : GpuElementFlatIndex.upload(device, element, rows, n, dims, metric);
    }

    /** Queries as the codec passes them: a byte or bit field's stored bytes as floats, a bfloat16 field's floats. */
    float[] queries(int nq, Random r) {
      Data q = random(element, nq, dims, r);
      if (element == Element.BFLOAT16) {
        return q.floats;
      }
      float[] f = new float[q.rows.length];
      for (int i = 0; i < f.length; i++) {
        f[i] = q.rows[i];
      }
      return f;
    }

    List<Hit> exact(Metric metric, float[] queries, int q, long[] accept) {
      return ElementReference.exact(element, metric, rows, floats, n, dims, queries, q, accept);
    }
  }

  /** The element and metric pairs an index takes (bit: Hamming distance alone). */
  private static List<Object[]> kinds() {
    List<Object[]> kinds = new ArrayList<>();
    for (Element e : Element.values()) {
      for (Metric m : Metric.values()) {
        if (e != Element.BIT || m == Metric.L2) {
          kinds.add(new Object[] {e, m});
        }
      }
    }
    return kinds;
  }

  @Test
  void matchesBruteForce() {
    Random r = new Random(38);
    List<String> failures = new ArrayList<>();
    int cases = 0;
    for (Object[] kind : kinds()) {
      Element element = (Element) kind[0];
      Metric metric = (Metric) kind[1];
      for (int[] shape : new int[][] {{5000, 64}, {3001, 37}, {20, 16}}) {
        Data data = Data.random(element, shape[0], shape[1], r);
        try (GpuElementFlatIndex index = data.upload(metric)) {
          assertEquals(GpuElementFlatIndex.deviceBytes(element, data.n, data.dims), index.deviceBytes());
          assertEquals(index.deviceBytes(), index.deviceBytesByPart().get(org.gpuvectors.cuda.MemoryPart.VECTORS));
          for (int nq : new int[] {1, 7, 70}) {
            float[] queries = data.queries(nq, r);
            for (int filter = 0; filter < 3; filter++) {
              long[] mask = filter == 0 ? null : GpuFlatIndexGpuTest.bits(data.n, filter == 1 ? 0.3 : 5.0 / data.n, r);
              List<List<Hit>> truth = new ArrayList<>();
              for (int q = 0; q < nq; q++) {
                truth.add(data.exact(metric, queries, q, mask));
              }
              for (int k : new int[] {1, 10, 100, 1000}) {
                cases++;
                long before = index.scannedQueries();
                SearchResult res = index.search(queries, nq, k, mask);
                String where = element + " " + metric + " n=" + data.n + " dims=" + data.dims + " nq=" + nq + " k=" + k
                    + " filter=" + filter;
                if (index.scannedQueries() - before != nq) {
                  failures.add(where + ": not searched on the GPU");
                }
                for (int q = 0; q < nq; q++) {
                  String f = compare(res, q, k, truth.get(q), element, metric, data, queries, mask);
                  if (f != null) {
                    failures.add(where + " query " + q + ": " + f);
                    break;
                  }
                }
              }
            }
          }
        }
      }
    }
    assertTrue(failures.isEmpty(), failures.size() + " of " + cases + " failed, first: "
        + failures.subList(0, Math.min(5, failures.size())));
    assertEquals(0, device.bytesInUse(), "all device buffers returned to the pool");
  }

  /** The largest k (2,048, its own block size), and k above the accepted rows: the rest of a row empty. */
  @Test
  void largestKAndMoreThanAccepted() {
    Random r = new Random(39);
    for (Object[] kind : kinds()) {
      Element element = (Element) kind[0];
      Metric metric = (Metric) kind[1];
      Data data = Data.random(element, 3000, 24, r);
      try (GpuElementFlatIndex index = data.upload(metric)) {
        float[] queries = data.queries(2, r);
        long[] sparse = GpuFlatIndexGpuTest.bits(data.n, 0.01, r);
        for (long[] mask : new long[][] {null, sparse}) {
          SearchResult res = index.search(queries, 2, 2048, mask);
          for (int q = 0; q < 2; q++) {
            String f = compare(res, q, 2048, data.exact(metric, queries, q, mask), element, metric, data, queries, mask);
            assertEquals(null, f, element + " " + metric + " query " + q + (mask == null ? "" : " filtered"));
          }
        }
      }
    }
  }

  /** Per-query masks (one a query, a null one accepting all) in one pass, each query against its own brute force. */
  @Test
  void perQueryMasks() {
    Random r = new Random(40);
    for (Object[] kind : kinds()) {
      Element element = (Element) kind[0];
      Metric metric = (Metric) kind[1];
      Data data = Data.random(element, 2500, 33, r);
      try (GpuElementFlatIndex index = data.upload(metric)) {
        int nq = 5;
        float[] queries = data.queries(nq, r);
        long[][] masks = new long[nq][];
        for (int q = 0; q < nq; q++) {
          masks[q] = q == 2 ? null : GpuFlatIndexGpuTest.bits(data.n, 0.05 + 0.2 * q, r);
        }
        int k = 40;
        SearchResult res = BatchSearch.run(device, List.of(new SearchGroup(index, queries, nq, k, null, masks)))[0];
        for (int q = 0; q < nq; q++) {
          String f = compare(res, q, k, data.exact(metric, queries, q, masks[q]), element, metric, data, queries,
              masks[q]);
          assertEquals(null, f, element + " " + metric + " query " + q);
        }
      }
    }
  }

  /**
   * One pass over a float index and an index of every element: each group's results are those it gets in a pass of
   * its own (the pass has no switch over index types, and the float group keeps its normalised cosine queries while
   * the element groups keep theirs raw).
   */
  @Test
  void mixedPassEqualsPassesAlone() {
    Random r = new Random(41);
    int n = 4000, dims = 32, nq = 3, k = 25;
    float[] floats = GpuFlatIndexGpuTest.random(n * dims, r);
    try (GpuFlatIndex flat = GpuFlatIndex.upload(device, floats, n, dims, Metric.COSINE);
         GpuElementFlatIndex bytes = Data.random(Element.BYTE, n, dims, r).upload(Metric.COSINE);
         GpuElementFlatIndex bits = Data.random(Element.BIT, n, dims, r).upload(Metric.L2);
         GpuElementFlatIndex bf16 = Data.random(Element.BFLOAT16, n, dims, r).upload(Metric.COSINE)) {
      List<SearchGroup> groups = new ArrayList<>();
      groups.add(new SearchGroup(flat, GpuFlatIndexGpuTest.random(nq * dims, r), nq, k, null, null));
      for (GpuElementFlatIndex index : List.of(bytes, bits, bf16)) {
        float[] queries = Data.random(index.element(), nq, dims, r).queries(nq, r);
        groups.add(new SearchGroup(index, queries, nq, k, GpuFlatIndexGpuTest.bits(n, 0.5, r), null));
      }
      SearchResult[] together = BatchSearch.run(device, groups);
      for (int g = 0; g < groups.size(); g++) {
        SearchResult alone = BatchSearch.run(device, List.of(groups.get(g)))[0];
        for (int q = 0; q < nq; q++) {
          for (int i = 0; i < k; i++) {
            assertEquals(alone.id(q, i), together[g].id(q, i), "group " + g + " query " + q + " rank " + i);
            assertEquals(alone.distance(q, i), together[g].distance(q, i), "group " + g + " query " + q);
          }
        }
      }
    }
  }

  /** A one-query pass run again and again (captured as a CUDA graph from its second run): the same results. */
  @Test
  void capturedPassesAnswerAlike() {
    Random r = new Random(42);
    Data data = Data.random(Element.BYTE, 6000, 48, r);
    try (GpuElementFlatIndex index = data.upload(Metric.INNER_PRODUCT)) {
      float[] query = data.queries(1, r);
      SearchResult first = index.search(query, 1, 10, null);
      String f = compare(first, 0, 10, data.exact(Metric.INNER_PRODUCT, query, 0, null), Element.BYTE,
          Metric.INNER_PRODUCT, data, query, null);
      assertEquals(null, f);
      for (int run = 0; run < 4; run++) {
        SearchResult again = index.search(query, 1, 10, null);
        int[] ids = new int[10];
        int[] want = new int[10];
        for (int i = 0; i < 10; i++) {
          ids[i] = again.id(0, i);
          want[i] = first.id(0, i);
        }
        assertArrayEquals(want, ids, "run " + run);
      }
    }
  }

  /** A byte index at 768 dimensions takes at most a quarter of what a float index of the same vectors takes. */
  @Test
  void byteRowsTakeAQuarterOfFloats() {
    Random r = new Random(43);
    int n = 2000, dims = 768;
    Data data = Data.random(Element.BYTE, n, dims, r);
    float[] floats = new float[n * dims];
    for (int i = 0; i < floats.length; i++) {
      floats[i] = data.rows[i];
    }
    for (Metric metric : Metric.values()) {
      try (GpuFlatIndex flat = GpuFlatIndex.upload(device, floats, n, dims, metric);
           GpuElementFlatIndex bytes = data.upload(metric)) {
        assertTrue(4 * bytes.deviceBytes() <= flat.deviceBytes(), metric + ": " + bytes.deviceBytes() + " bytes, float "
            + flat.deviceBytes());
      }
    }
  }

  /** Another index kind's search parameters are refused by name before a pass starts. */
  @Test
  void refusesOtherKindsOfSearch() {
    Data data = Data.random(Element.BYTE, 100, 8, new Random(44));
    try (GpuElementFlatIndex index = data.upload(Metric.L2)) {
      float[] q = data.queries(1, new Random(45));
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> new SearchGroup(index, q, 1, 5, new SearchParams.Ivf(4), null, null));
      assertTrue(e.getMessage().contains("GpuElementFlatIndex") && e.getMessage().contains("Flat"), e.getMessage());
      SearchResult exact = BatchSearch.run(device, List.of(new SearchGroup(index, q, 1, 5, SearchParams.EXACT, null,
          null)))[0];
      assertEquals(5, exact.count(0));
    }
  }

  /**
   * Query q's k results against its brute force {@code truth} (best first): the count; per rank the oracle's distance
   * (integers exactly; bfloat16 within FP32 summation error); distinct ids, each accepted and at its own distance; and
   * for byte and bit, each run of equal distances the oracle's ids (in any order: Lucene's collectors order equal scores
   * by doc), so the rows tied at the k-th distance are the lowest ids.
   */
  static String compare(SearchResult res, int q, int k, List<Hit> truth, Element element, Metric metric, Data data,
                        float[] queries, long[] mask) {
    int want = Math.min(k, truth.size());
    if (res.count(q) != want) {
      return "count " + res.count(q) + ", expected " + want;
    }
    // Within a run of equal distances the order is the device's: Lucene's collectors rank equal scores by doc
    // themselves. What must match is which rows: each run's ids, sorted, are the oracle's (the last run's the lowest
    // ids at the k-th distance, as Lucene keeps the lowest docs).
    int[] ids = new int[want];
    for (int i = 0; i < want; i++) {
      ids[i] = res.id(q, i);
    }
    for (int start = 0; start < want; ) {
      int end = start + 1;
      while (end < want && res.distance(q, end) == res.distance(q, start)) {
        end++;
      }
      java.util.Arrays.sort(ids, start, end);
      start = end;
    }
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < want; i++) {
      int id = element == Element.BFLOAT16 ? res.id(q, i) : ids[i];
      double expected = truth.get(i).distance();
      if (!close(res.distance(q, i), expected, element, metric, data.dims)) {
        return "rank " + i + " distance " + res.distance(q, i) + ", expected " + expected;
      }
      if (element != Element.BFLOAT16 && id != truth.get(i).id()) {
        // integer distances: the rows tied at the k-th are the lowest ids, as Lucene keeps the lowest docs
        return "rank " + i + " id " + id + ", expected " + truth.get(i).id() + " (distance " + expected + ")";
      }
      if (id < 0 || id >= data.n || !seen.add(id)) {
        return "rank " + i + " id " + id + " out of range or repeated";
      }
      if (mask != null && (mask[id >>> 6] >>> (id & 63) & 1) == 0) {
        return "rank " + i + " id " + id + " not accepted";
      }
      double own = ElementReference.distance(element, metric, data.rows, data.floats, id, data.dims, queries, q);
      if (!close(res.distance(q, i), own, element, metric, data.dims)) {
        return "rank " + i + " id " + id + " reported at " + res.distance(q, i) + ", its distance is " + own;
      }
    }
    for (int i = want; i < k; i++) {
      if (res.id(q, i) != -1) {
        return "rank " + i + " holds " + res.id(q, i) + " past the " + want + " accepted rows";
      }
    }
    if (want > 0) {
      double kth = truth.get(want - 1).distance();
      for (int i = 0; i < want; i++) {
        Hit h = truth.get(i);
        boolean strictlyBetter = metric == Metric.L2 ? h.distance() < kth : h.distance() > kth;
        if (strictlyBetter && !close(h.distance(), kth, element, metric, data.dims) && !seen.contains(h.id())) {
          return "row " + h.id() + " at " + h.distance() + " (better than the k-th, " + kth + ") missing";
        }
      }
    }
    return null;
  }

  /**
   * Whether a reported distance is the reference's: integer distances (byte, bit) exactly, after the kernel's one
   * conversion to float; byte cosine exactly (both divide in double); bfloat16 within FP32 summation error.
   */
  private static boolean close(double got, double want, Element element, Metric metric, int dims) {
    if (element != Element.BFLOAT16) {
      return (float) got == (float) want;
    }
    double scale = metric == Metric.COSINE ? 1 : Math.max(1, Math.abs(want)) + dims;
    return Math.abs(got - want) <= 1e-5 * scale;
  }
}
