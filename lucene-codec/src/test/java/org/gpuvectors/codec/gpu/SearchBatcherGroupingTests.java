package org.gpuvectors.codec.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.junit.jupiter.api.Test;

/**
 * How {@link SearchBatcher} groups the searches of one pass: one group per device index, with the
 * largest k and effort of its searches, except that a graph's exact searches (a selective filter)
 * form their own group, so that they do not turn the concurrent walks of the same index into exact
 * scans of the whole segment.
 */
class SearchBatcherGroupingTests {

  /** A device index that only has a shape (the passes of these tests never read it). */
  static DeviceIndex index(int n, int dims) {
    return new DeviceIndex() {
      @Override
      public int size() {
        return n;
      }

      @Override
      public int dims() {
        return dims;
      }

      @Override
      public org.gpuvectors.cuda.Metric metric() {
        return org.gpuvectors.cuda.Metric.L2;
      }

      @Override
      public org.gpuvectors.cuda.DeviceBytes deviceBytesByPart() {
        return org.gpuvectors.cuda.DeviceBytes.NONE;
      }

      @Override
      public void checkSearch(SearchParams params, int k) {}

      @Override
      public void close() {}
    };
  }

  /** A batcher whose passes record their groups and answer each query with its group's position as every id. */
  private static SearchBatcher recording(List<SearchGroup> seen) {
    return new SearchBatcher((groups, timing) -> {
      seen.addAll(groups);
      SearchResult[] out = new SearchResult[groups.size()];
      for (int g = 0; g < out.length; g++) {
        SearchGroup group = groups.get(g);
        int[] ids = new int[group.numQueries() * group.k()];
        for (int i = 0; i < ids.length; i++) {
          ids[i] = g; // which group answered
        }
        out[g] = new SearchResult(group.numQueries(), group.k(), ids, new float[ids.length]);
      }
      return out;
    }, 1 << 20, 1, new GpuSearchStats());
  }

  @Test
  void exactGraphSearchesRunApartFromTheWalksOfTheSameIndex() {
    DeviceIndex graph = index(1000, 2);
    DeviceIndex other = index(50, 2);
    List<SearchGroup> seen = new ArrayList<>();
    SearchBatcher batcher = recording(seen);
    float[][] one = {{1, 2}};
    SearchBatcher.Search walk64 = new SearchBatcher.Search(graph, one, 1, 10, null, new SearchParams.Graph(64));
    SearchBatcher.Search exact = new SearchBatcher.Search(graph, one, 1, 10, new long[16], SearchParams.EXACT);
    SearchBatcher.Search walk32 = new SearchBatcher.Search(graph, one, 1, 5, null, new SearchParams.Graph(32));
    SearchBatcher.Search flat = new SearchBatcher.Search(other, one, 1, 3, null);
    batcher.run(List.of(walk64, exact, walk32, flat));

    assertEquals(3, seen.size(), "walks, exact searches and the other index: " + seen);
    int walks = -1;
    int exacts = -1;
    int others = -1;
    for (int g = 0; g < seen.size(); g++) {
      SearchGroup group = seen.get(g);
      if (group.index() == other) {
        others = g;
      } else if (group.params().equals(SearchParams.EXACT)) {
        exacts = g;
      } else {
        walks = g;
      }
    }
    assertEquals(new SearchParams.Graph(64), seen.get(walks).params(), "the walks run at their widest");
    assertEquals(2, seen.get(walks).numQueries());
    assertEquals(1, seen.get(exacts).numQueries());
    assertTrue(walks < exacts, "an index's walks before its exact searches");
    assertEquals(walks, walk64.result().id(0, 0));
    assertEquals(walks, walk32.result().id(0, 0));
    assertEquals(exacts, exact.result().id(0, 0));
    assertEquals(others, flat.result().id(0, 0));
  }

  /**
   * A pass's groups come in one order whichever of its searches arrived first (the order a captured pass's shape
   * depends on): a query's searches over eight segments led by each segment in turn, every pass the same order of
   * indexes; each search still gets its own group's results.
   */
  @Test
  void groupsComeInOneOrderWhicheverSearchLeads() {
    List<DeviceIndex> segments = new ArrayList<>();
    for (int s = 0; s < 8; s++) {
      segments.add(index(1000 + s, 2));
    }
    float[][] one = {{1, 2}};
    List<DeviceIndex> first = null;
    for (int lead = 0; lead < segments.size(); lead++) {
      List<SearchGroup> seen = new ArrayList<>();
      SearchBatcher batcher = recording(seen);
      List<SearchBatcher.Search> searches = new ArrayList<>();
      for (int i = 0; i < segments.size(); i++) {
        searches.add(new SearchBatcher.Search(segments.get((lead + i) % segments.size()), one, 1, 10, null));
      }
      batcher.run(searches);
      List<DeviceIndex> order = seen.stream().map(SearchGroup::index).toList();
      assertEquals(segments.size(), order.size());
      if (first == null) {
        first = order;
      }
      assertEquals(first, order, "lead " + lead + ": the same order of groups");
      for (SearchBatcher.Search search : searches) {
        assertTrue(order.get(search.result().id(0, 0)) == search.index, "its own group's result");
      }
    }
  }
}
