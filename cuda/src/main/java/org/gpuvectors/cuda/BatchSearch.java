package org.gpuvectors.cuda;

import java.util.Arrays;
import java.util.List;

/**
 * Runs a batch of searches, over one or many {@link DeviceIndex}es ({@link GpuFlatIndex}, {@link
 * GpuIvfFlatIndex}), as one GPU pass: every group's queries and accept masks go to the device in one
 * copy each, every group's kernels are enqueued back to back on the device stream, and all results
 * come back in one copy per array. The host waits once per batch, not once per index: what makes
 * many segments cost about what one does.
 *
 * <p>Threading: takes the device lock for the whole pass (the GPU runs one batch at a time).
 */
public final class BatchSearch {

  private BatchSearch() {}

  /** Per group, per query the group's k best (id, distance) pairs, best first; in group order. */
  public static SearchResult[] run(GpuDevice device, List<SearchGroup> groups) {
    return run(device, groups, new long[2]);
  }

  /**
   * As {@link #run(GpuDevice, List)}; adds to {@code timing[0]} the nanoseconds spent enqueuing the
   * pass on the host (from the device lock to the last launch) and to {@code timing[1]} those spent
   * waiting for the device and the downloads: which of host and GPU bounds a pass.
   */
  public static SearchResult[] run(GpuDevice device, List<SearchGroup> groups, long[] timing) {
    int count = groups.size();
    long[] queryAt = new long[count]; // float offset of the group's queries in the packed array
    long[] normsAt = new long[count]; // float offset of their squared norms (L2), -1 when none
    long[] maskAt = new long[count]; // word offset of the group's masks, -1 when none
    long[] maskRowWords = new long[count];
    long[] outAt = new long[count]; // element offset of the group's results
    long queryFloats = 0;
    long maskWords = 0;
    long outElements = 0;
    for (int g = 0; g < count; g++) {
      SearchGroup group = groups.get(g);
      int words = SearchGroup.maskWords(group.index().size());
      queryAt[g] = queryFloats;
      queryFloats += (long) group.numQueries() * group.index().dims();
      if (group.index().metric() == Metric.L2) {
        normsAt[g] = queryFloats; // ||q||^2 right after the group's queries: no norm kernel per group
        queryFloats += group.numQueries();
      } else {
        normsAt[g] = -1;
      }
      maskAt[g] = -1;
      if (group.sharedMask() != null) {
        maskAt[g] = maskWords;
        maskWords += words;
      } else if (group.queryMasks() != null) {
        maskAt[g] = maskWords;
        maskRowWords[g] = words;
        maskWords += (long) words * group.numQueries();
      }
      outAt[g] = outElements;
      outElements += (long) group.numQueries() * group.k();
    }
    if (queryFloats > Integer.MAX_VALUE - 8 || maskWords > Integer.MAX_VALUE - 8 || outElements > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("batch too large: " + queryFloats + " query floats, " + maskWords
          + " mask words, " + outElements + " results");
    }
    float[] queries = new float[(int) queryFloats];
    long[] masks = new long[(int) maskWords];
    for (int g = 0; g < count; g++) {
      pack(groups.get(g), queries, (int) queryAt[g], (int) normsAt[g], masks, (int) maskAt[g]);
    }
    float[] distances = new float[(int) outElements];
    int[] ids = new int[(int) outElements];
    Arrays.fill(ids, -1);
    try (GpuDevice.Scope s = device.lock();
         DeviceBuffer dq = device.allocate(4L * Math.max(1, queryFloats));
         DeviceBuffer dm = device.allocate(8L * Math.max(1, maskWords));
         DeviceBuffer outV = device.allocate(4L * Math.max(1, outElements));
         DeviceBuffer outI = device.allocate(4L * Math.max(1, outElements))) {
      long start = System.nanoTime();
      device.upload(queries, 0, queries.length, dq, 0);
      if (masks.length > 0) {
        device.upload(masks, dm);
      }
      boolean any = false;
      for (int g = 0; g < count; g++) {
        SearchGroup group = groups.get(g);
        if (group.numQueries() == 0 || group.index().size() == 0) {
          continue; // nothing to search: the slots keep id -1
        }
        long accept = maskAt[g] < 0 ? 0 : dm.address() + 8L * maskAt[g];
        long norms = normsAt[g] < 0 ? 0 : dq.address() + 4L * normsAt[g];
        long groupQueries = dq.address() + 4L * queryAt[g];
        switch (group.index()) {
          case GpuFlatIndex flat -> flat.enqueueSearch(groupQueries, norms, group.numQueries(), group.k(), accept,
              maskRowWords[g], outV, outI, outAt[g]);
          case GpuIvfFlatIndex ivf -> ivf.enqueueSearch(groupQueries, norms, group.numQueries(), group.k(),
              group.nprobe(), accept, maskRowWords[g], outV, outI, outAt[g]);
          default -> throw new IllegalArgumentException(
              "no batched search for " + group.index().getClass().getSimpleName());
        }
        any = true;
      }
      long enqueued = System.nanoTime();
      if (any) {
        device.download(outV, 0, distances, 0, distances.length);
        device.download(outI, 0, ids, 0, ids.length);
      }
      timing[0] += enqueued - start;
      timing[1] += System.nanoTime() - enqueued;
    }
    SearchResult[] results = new SearchResult[count];
    for (int g = 0; g < count; g++) {
      SearchGroup group = groups.get(g);
      int n = group.numQueries() * group.k();
      int from = (int) outAt[g];
      results[g] = new SearchResult(group.numQueries(), group.k(), Arrays.copyOfRange(ids, from, from + n),
          Arrays.copyOfRange(distances, from, from + n));
    }
    return results;
  }

  /** Copies a group's queries (normalised for cosine) and masks into the packed host arrays. */
  private static void pack(SearchGroup group, float[] queries, int queryAt, int normsAt, long[] masks, int maskAt) {
    int dims = group.index().dims();
    int floats = group.numQueries() * dims;
    System.arraycopy(group.queries(), 0, queries, queryAt, floats);
    if (group.index().metric() == Metric.COSINE) {
      GpuFlatIndex.normalizeRange(queries, queryAt, group.numQueries(), dims);
    }
    if (normsAt >= 0) {
      for (int q = 0; q < group.numQueries(); q++) {
        float s = 0; // in float, fused multiply-add, as the norm kernel sums (the same value up to rounding)
        for (int d = 0; d < dims; d++) {
          float x = queries[queryAt + q * dims + d];
          s = Math.fma(x, x, s);
        }
        queries[normsAt + q] = s;
      }
    }
    int words = SearchGroup.maskWords(group.index().size());
    if (group.sharedMask() != null) {
      System.arraycopy(group.sharedMask(), 0, masks, maskAt, words);
    } else if (group.queryMasks() != null) {
      for (int q = 0; q < group.numQueries(); q++) {
        long[] mask = group.queryMasks()[q];
        if (mask == null) {
          Arrays.fill(masks, maskAt + q * words, maskAt + (q + 1) * words, -1L);
        } else {
          System.arraycopy(mask, 0, masks, maskAt + q * words, words);
        }
      }
    }
  }
}
