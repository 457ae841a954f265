package org.gpuvectors.codec.ivf;

import java.io.IOException;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.KnnCollector;

/**
 * A segment field's IVF index as read from the {@code .gvd} file, with its CPU search: {@code
 * ivf_flat}'s lists of raw vectors ({@link IvfField}) or {@code ivf_pq}'s lists of codes ({@link
 * IvfPqField}). Both probe the same lists for the same query and k ({@link IvfProbes}).
 */
public sealed interface IvfIndex permits IvfField, IvfPqField {

  /** Number of lists. */
  int nlist();

  /** Heap held (centroids, list offsets, codebooks); ordinals and codes stay in the file. */
  long ramBytesUsed();

  /** Lists to scan for a search of k results over {@code accepted} accepted vectors ({@link IvfProbes}). */
  int probes(int k, long accepted);

  /**
   * Searches one query on the CPU, handing the collector the hits with the field's exact scores
   * (Lucene's similarity through {@code scorers}); honours the accepted documents and the
   * collector's visit limit (it stops once the collector is early-terminated).
   */
  void search(
      FlatVectorsScorer scorers, VectorSimilarityFunction similarity, FloatVectorValues vectors, float[] query,
      KnnCollector collector, AcceptDocs accept) throws IOException;
}
