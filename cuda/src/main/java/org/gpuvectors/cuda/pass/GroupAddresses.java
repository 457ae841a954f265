package org.gpuvectors.cuda.pass;

import org.gpuvectors.cuda.runtime.DeviceBuffer;

/**
 * Where one {@link SearchGroup}'s part of a {@link BatchSearch} pass lies on the device: what an index needs to
 * enqueue its search of the group ({@link ResidentIndex#enqueue}) without knowing the pass's layout ({@link
 * PassLayout}).
 *
 * @param queries device address of the group's queries (row-major, normalised for cosine)
 * @param norms device address of their squared norms (L2, packed groups), or 0: the index computes them
 * @param accept device address of the group's accept masks, or 0: every vector accepted
 * @param acceptRowWords words between per-query masks, 0 for one mask shared by every query
 * @param outV the pass's distances
 * @param outI the pass's ids
 * @param outAt element of {@code outV} / {@code outI} where the group's results start ({@code k} a query)
 * @param statsAt element of {@code outV} where a half-scanned flat group's certificate inputs go (4 floats a
 *     query, {@code GpuFlatIndex#enqueueHalfSearch}), or -1: the group is searched in FP32
 * @param feed the group's queries arriving block by block on the pass's copy stream ({@link QueryUploads}), or null
 *     when they went up with the packed inputs
 */
public record GroupAddresses(long queries, long norms, long accept, long acceptRowWords, DeviceBuffer outV,
                      DeviceBuffer outI, long outAt, long statsAt, QueryUploads.Feed feed) {

  /** Waits for all of the group's queries (when they arrive block by block): before a kernel that reads them all. */
  public void awaitQueries() {
    if (feed != null) {
      feed.awaitAll();
    }
  }
}
