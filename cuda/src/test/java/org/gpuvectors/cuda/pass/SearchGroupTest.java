package org.gpuvectors.cuda.pass;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.graph.GpuGraphIndex;
import org.gpuvectors.cuda.ivf.IvfSearch;
import org.gpuvectors.cuda.select.KSelect;

/** {@link SearchGroup}'s search parameters and query forms (no GPU needed: a host-only {@link DeviceIndex}). */
class SearchGroupTest {

  /** A flat-like index on the host: takes {@link SearchParams#FLAT} only, as {@code GpuFlatIndex} does. */
  private static final DeviceIndex INDEX = new DeviceIndex() {
    public int size() {
      return 100;
    }

    public int dims() {
      return 4;
    }

    public Metric metric() {
      return Metric.L2;
    }

    public org.gpuvectors.cuda.DeviceBytes deviceBytesByPart() {
      return org.gpuvectors.cuda.DeviceBytes.NONE;
    }

    public void checkSearch(SearchParams params, int k) {
      if (!(params instanceof SearchParams.Flat)) {
        throw new IllegalArgumentException("flat only: " + params);
      }
    }

    public void close() {}
  };

  /** An IVF-like resident index without a device: its checks are {@link IvfSearch}'s, as the IVF indexes' are. */
  private static final class HostIvf extends ResidentIndex {
    HostIvf() {
      super(null, 100, 4, Metric.L2);
    }

    @Override
    public org.gpuvectors.cuda.DeviceBytes deviceBytesByPart() {
      return org.gpuvectors.cuda.DeviceBytes.NONE;
    }

    @Override
    public void checkSearch(SearchParams params, int k) {
      IvfSearch.probes(IvfSearch.nprobe(this, params), 16);
    }

    @Override
    protected void enqueue(SearchGroup group, GroupAddresses at) {
      throw new UnsupportedOperationException("host only");
    }

    @Override
    protected void freeDeviceMemory() {}
  }

  @Test
  void flatGroupsDefaultToFlatParamsAndTheIndexChecksThem() {
    float[] queries = new float[8];
    assertEquals(SearchParams.FLAT, new SearchGroup(INDEX, queries, 2, 10, null, null).params());
    assertThrows(IllegalArgumentException.class,
        () -> new SearchGroup(INDEX, queries, 2, 10, new SearchParams.Ivf(7), null, null));
    assertThrows(NullPointerException.class, () -> new SearchGroup(INDEX, queries, 2, 10, null, null, null));
  }

  @Test
  void ivfParamsNeedAtLeastOneListAndAnIvfIndex() {
    float[] queries = new float[8];
    HostIvf ivf = new HostIvf();
    assertEquals(new SearchParams.Ivf(7), new SearchGroup(ivf, queries, 2, 10, new SearchParams.Ivf(7), null, null)
        .params());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new SearchParams.Ivf(0));
    assertEquals("nprobe must be >= 1: 0", e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> new SearchGroup(ivf, queries, 2, 10, SearchParams.FLAT, null, null));
    assertEquals("HostIvf searches with SearchParams.Ivf, not Flat[]", e.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> new SearchGroup(ivf, queries, 2, 10, new SearchParams.Graph(64), null, null));
    // capped at nlist (16): any nprobe passes; past the coarse step's selection only where nlist allows it
    new SearchGroup(ivf, queries, 2, 10, new SearchParams.Ivf(KSelect.MAX_K + 1), null, null);
    assertThrows(IllegalArgumentException.class, () -> IvfSearch.probes(KSelect.MAX_K + 1, KSelect.MAX_K + 1));
  }

  @Test
  void graphParamsAreAWalkWithinTheKernelsWidthOrTheExactSearch() {
    GpuGraphIndex.checkParams(new SearchParams.Graph(GpuGraphIndex.MAX_WIDTH), 10);
    GpuGraphIndex.checkParams(SearchParams.EXACT, KSelect.MAX_K); // no walk: no width limit
    assertThrows(IllegalArgumentException.class,
        () -> GpuGraphIndex.checkParams(new SearchParams.Graph(GpuGraphIndex.MAX_WIDTH + 1), 10));
    assertThrows(IllegalArgumentException.class,
        () -> GpuGraphIndex.checkParams(new SearchParams.Graph(64), GpuGraphIndex.MAX_WIDTH + 1), "max(width, k)");
    assertThrows(IllegalArgumentException.class, () -> new SearchParams.Graph(0));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> GpuGraphIndex.checkParams(new SearchParams.Ivf(8), 10));
    assertEquals("GpuGraphIndex searches with SearchParams.Graph or SearchParams.Exact, not Ivf[nprobe=8]",
        e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> GpuGraphIndex.checkParams(SearchParams.FLAT, 10));
  }

  @Test
  void mergedSearchesRunAtTheWidestOfTheirKind() {
    assertEquals(new SearchParams.Ivf(16), new SearchParams.Ivf(4).widest(new SearchParams.Ivf(16)));
    assertEquals(new SearchParams.Ivf(16), new SearchParams.Ivf(16).widest(new SearchParams.Ivf(4)));
    assertEquals(new SearchParams.Graph(64), new SearchParams.Graph(32).widest(new SearchParams.Graph(64)));
    assertEquals(SearchParams.EXACT, SearchParams.EXACT.widest(SearchParams.EXACT));
    assertEquals(SearchParams.FLAT, SearchParams.FLAT.widest(SearchParams.FLAT));
    assertThrows(IllegalArgumentException.class, () -> SearchParams.EXACT.widest(new SearchParams.Graph(64)));
    assertThrows(IllegalArgumentException.class, () -> new SearchParams.Ivf(4).widest(SearchParams.FLAT));
  }

  @Test
  void queryRowsReadAsTheRowMajorQueriesTheyStandFor() {
    float[][] rows = {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}};
    float[] rowMajor = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    SearchGroup byRows = SearchGroup.ofRows(INDEX, rows, 3, 10, SearchParams.FLAT, null, null);
    SearchGroup packed = new SearchGroup(INDEX, rowMajor, 3, 10, null, null);
    for (SearchGroup group : new SearchGroup[] {byRows, packed}) {
      float[] out = new float[14];
      group.copyQueries(1, 2, out, 2);
      assertArrayEquals(new float[] {0, 0, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0, 0, 0}, out);
      assertArrayEquals(new float[] {9, 10, 11, 12}, group.query(2));
    }
    assertNotSame(rows[0], byRows.query(0), "a copy: callers may normalise it");
    // only the first numQueries rows are read
    assertEquals(2, SearchGroup.ofRows(INDEX, new float[][] {rows[0], rows[1], new float[1]}, 2, 10, SearchParams.FLAT, null, null).numQueries());
  }

  @Test
  void badQueryFormsAreRefused() {
    float[][] rows = {{1, 2, 3, 4}, {5, 6, 7}};
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> SearchGroup.ofRows(INDEX, rows, 2, 10, SearchParams.FLAT, null, null));
    assertEquals("query 1 has 3 dimensions, the index 4", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> SearchGroup.ofRows(INDEX, rows, 3, 10, SearchParams.FLAT, null, null));
    assertThrows(IllegalArgumentException.class,
        () -> new SearchGroup(INDEX, new float[4], 1, 10, SearchParams.FLAT, null, null, new float[][] {{1, 2, 3, 4}}));
    assertThrows(IllegalArgumentException.class,
        () -> new SearchGroup(INDEX, null, 1, 10, SearchParams.FLAT, null, null, null));
  }
}
