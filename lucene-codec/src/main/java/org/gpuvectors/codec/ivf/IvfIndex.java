package org.gpuvectors.codec.ivf;

import org.gpuvectors.codec.index.ApproximateIndex;

/**
 * A segment field's IVF index as read from the {@code .gvd} file, with its CPU search: {@code
 * ivf_flat}'s lists of raw vectors ({@link IvfField}) or {@code ivf_pq}'s lists of codes ({@link
 * IvfPqField}). Both probe the same lists for the same query and k ({@link IvfProbes}).
 */
public sealed interface IvfIndex extends ApproximateIndex permits IvfField, IvfPqField {

  /** Number of lists. */
  int nlist();

  /** Heap held (centroids, list offsets, codebooks); ordinals and codes stay in the file. */
  @Override
  long ramBytesUsed();

  /** Lists to scan for a search of k results over {@code accepted} accepted vectors ({@link IvfProbes}). */
  int probes(int k, long accepted);

  /** The lists probed. */
  @Override
  default int effort(int k, long accepted) {
    return probes(k, accepted);
  }

  /** About the accepted vectors in the probed lists. */
  @Override
  default long visited(long accepted, int nprobe) {
    return (long) Math.ceil(accepted * (double) nprobe / nlist());
  }
}
