package org.gpuvectors.codec.index;

import java.io.IOException;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.KnnCollector;

/**
 * A segment field's approximate search structure as read from the {@code .gvd} file: IVF lists
 * ({@link org.gpuvectors.codec.ivf.IvfIndex}) or a graph ({@link org.gpuvectors.codec.graph.GraphField}), held by
 * the field's entry in the segment's reader (a flat field has none).
 * The GPU and the CPU search it with the same effort for the same query and k.
 */
public interface ApproximateIndex {

  /** Heap held by the structure (its bulk stays in the file). */
  long ramBytesUsed();

  /**
   * The effort of a search for k results over {@code accepted} accepted vectors: lists probed (IVF)
   * or the beam's width (graph).
   */
  int effort(int k, long accepted);

  /** About how many vectors a search at this effort scores (checked against a collector's visit limit). */
  long visited(long accepted, int effort);

  /**
   * Searches one query on the CPU, handing the collector the hits with the field's exact scores
   * (Lucene's similarity through {@code scorers}); honours the accepted documents and the
   * collector's visit limit (it stops once the collector is early-terminated).
   *
   * @param accepted how many of the field's vectors {@code accept} accepts, counted exactly (the GPU
   *     path's mask count: {@link AcceptDocs#cost()} is no count, e.g. the document count of live
   *     docs, and the effort must be the GPU's for the same search)
   */
  void search(
      FlatVectorsScorer scorers, VectorSimilarityFunction similarity, FloatVectorValues vectors, float[] query,
      KnnCollector collector, AcceptDocs accept, long accepted) throws IOException;
}
