package org.gpuvectors.codec.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.junit.jupiter.api.Test;

/**
 * When {@link SearchBatcher} starts a pass while another runs (two passes allowed): not at once, which would take the
 * few searches queued so far, but once the running pass is expected to end within a pass's host enqueue (moving
 * averages of the passes before); without a running pass, at once.
 */
class SearchBatcherPipelineTests {
  private static final long PASS_MS = 60;
  private static final long ENQUEUE_MS = 15; // reported as the pass's host enqueue

  @Test
  void aLaterPassStartsWhenTheRunningOneIsAboutToEnd() throws Exception {
    List<Long> starts = Collections.synchronizedList(new ArrayList<>());
    List<Integer> sizes = Collections.synchronizedList(new ArrayList<>());
    SearchBatcher batcher = new SearchBatcher((groups, timing) -> {
      starts.add(System.nanoTime());
      sizes.add(groups.get(0).numQueries());
      timing[0] += TimeUnit.MILLISECONDS.toNanos(ENQUEUE_MS);
      try {
        Thread.sleep(PASS_MS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      SearchResult[] out = new SearchResult[groups.size()];
      for (int g = 0; g < out.length; g++) {
        SearchGroup group = groups.get(g);
        out[g] = new SearchResult(group.numQueries(), group.k(), new int[group.numQueries() * group.k()],
            new float[group.numQueries() * group.k()]);
      }
      return out;
    }, 1000, 2, new GpuSearchStats());
    DeviceIndex index = SearchBatcherGroupingTests.index(100, 2);
    float[][] query = {{1, 2}};
    for (int i = 0; i < 3; i++) { // the averages: passes of ~60 ms, 15 of them enqueue
      long called = System.nanoTime();
      batcher.run(List.of(new SearchBatcher.Search(index, query, 1, 3, null)));
      assertTrue(starts.get(i) - called < TimeUnit.MILLISECONDS.toNanos(PASS_MS / 2),
          "no pass running: a search starts its own at once");
    }
    ExecutorService callers = Executors.newFixedThreadPool(4); // the common pool may have one thread
    try {
      pipeline(batcher, index, query, starts, sizes, callers);
    } finally {
      callers.shutdownNow();
    }
  }

  private static void pipeline(SearchBatcher batcher, DeviceIndex index, float[][] query, List<Long> starts,
                               List<Integer> sizes, ExecutorService callers) throws Exception {
    CompletableFuture<Void> first = CompletableFuture.runAsync(
        () -> batcher.run(List.of(new SearchBatcher.Search(index, query, 1, 3, null))), callers);
    while (starts.size() < 4) {
      Thread.onSpinWait();
    }
    Thread.sleep(5);
    List<CompletableFuture<Void>> later = new ArrayList<>();
    for (int i = 0; i < 3; i++) { // three searches queued while the first pass runs: one later pass takes them all
      later.add(CompletableFuture.runAsync(
          () -> batcher.run(List.of(new SearchBatcher.Search(index, query, 1, 3, null))), callers));
    }
    first.get(10, TimeUnit.SECONDS);
    for (CompletableFuture<Void> f : later) {
      f.get(10, TimeUnit.SECONDS);
    }
    long gap = starts.get(4) - starts.get(3);
    assertTrue(gap >= TimeUnit.MILLISECONDS.toNanos(PASS_MS - ENQUEUE_MS - 10),
        "the later pass waited until the running one was about to end: it began " + gap / 1_000_000 + " ms after it");
    assertEquals(5, starts.size(), "one pass took the three queued searches: " + sizes);
    assertEquals(3, sizes.get(4));
  }
}
