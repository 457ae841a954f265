package org.gpuvectors.cuda.ivf;

import java.util.List;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.ResidentIndex;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.runtime.DeviceBuffer;

/**
 * What both IVF index types ({@link GpuIvfFlatIndex}, {@link GpuIvfPqIndex}) hold and do alike, as Faiss's IVFBase
 * under its IVF-Flat and IVF-PQ: the coarse quantizer (the centroids as a flat index), the lists' layout on the
 * device (each position's ordinal, the lists' offsets), the search parameters they take ({@link SearchParams.Ivf})
 * and the convenience search. How a list is stored and scanned (raw vectors, PQ codes) is each subclass's; it owns
 * and frees all of the index's device memory, these buffers included.
 */
public abstract class GpuIvfIndex extends ResidentIndex {
  protected final int nlist;
  /** The centroids, searched by the coarse step. */
  protected final GpuFlatIndex centroids;
  /** n ints: the ordinal at each position of the list order. */
  protected final DeviceBuffer ords;
  /** nlist + 1 ints: list l holds the positions [offsets[l], offsets[l + 1]). */
  protected final DeviceBuffer offsets;

  protected GpuIvfIndex(GpuDevice device, int n, int dims, Metric metric, int nlist, GpuFlatIndex centroids,
                        DeviceBuffer ords, DeviceBuffer offsets) {
    super(device, n, dims, metric);
    this.nlist = nlist;
    this.centroids = centroids;
    this.ords = ords;
    this.offsets = offsets;
  }

  /** Inverted lists (centroids). */
  public final int nlist() {
    return nlist;
  }

  /**
   * The k best vectors per query among those of its {@code nprobe} nearest lists (nprobe capped at nlist), as the
   * subclass ranks them; {@code acceptBits} null = all vectors, else by ordinal. Synchronous: one pass of one group.
   */
  public final SearchResult search(float[] queries, int numQueries, int k, int nprobe, long[] acceptBits) {
    try (GpuDevice.Scope s = device.lock()) {
      ensureOpen();
      return BatchSearch.run(device,
          List.of(new SearchGroup(this, queries, numQueries, k, new SearchParams.Ivf(nprobe), acceptBits, null)))[0];
    }
  }

  /**
   * Lists a search with {@code nprobe} scans: nprobe capped at nlist. The coarse step selects that many centroids,
   * so it may not pass the selection's largest k.
   */
  final int probes(int nprobe) {
    return IvfSearch.probes(nprobe, nlist);
  }

  /** An IVF search probes lists: {@link SearchParams.Ivf} only, with no more lists than its coarse step selects. */
  @Override
  public final void checkSearch(SearchParams params, int k) {
    probes(IvfSearch.nprobe(this, params));
  }
}
