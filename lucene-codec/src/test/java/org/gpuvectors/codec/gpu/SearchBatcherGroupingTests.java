package org.gpuvectors.codec.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.GpuGraphIndex;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchGroup;
import org.gpuvectors.cuda.SearchResult;
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
      public Metric metric() {
        return Metric.L2;
      }

      @Override
      public long deviceBytes() {
        return 0;
      }

      @Override
      public void close() {}
    };
  }

  @Test
  void exactGraphSearchesRunApartFromTheWalksOfTheSameIndex() {
    DeviceIndex graph = index(1000, 2);
    DeviceIndex other = index(50, 2);
    List<SearchGroup> seen = new ArrayList<>();
    SearchBatcher batcher = new SearchBatcher((groups, timing) -> {
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
    float[][] one = {{1, 2}};
    SearchBatcher.Search walk64 = new SearchBatcher.Search(graph, one, 1, 10, null, 64);
    SearchBatcher.Search exact = new SearchBatcher.Search(graph, one, 1, 10, new long[16], GpuGraphIndex.EXACT);
    SearchBatcher.Search walk32 = new SearchBatcher.Search(graph, one, 1, 5, null, 32);
    SearchBatcher.Search flat = new SearchBatcher.Search(other, one, 1, 3, null);
    batcher.run(List.of(walk64, exact, walk32, flat));

    assertEquals(3, seen.size(), "walks, exact searches and the other index: " + seen);
    assertEquals(64, seen.get(0).nprobe(), "the walks run at their widest");
    assertEquals(2, seen.get(0).numQueries());
    assertEquals(GpuGraphIndex.EXACT, seen.get(1).nprobe());
    assertEquals(1, seen.get(1).numQueries());
    assertEquals(0, walk64.result().id(0, 0));
    assertEquals(0, walk32.result().id(0, 0));
    assertEquals(1, exact.result().id(0, 0));
    assertEquals(2, flat.result().id(0, 0));
  }
}
