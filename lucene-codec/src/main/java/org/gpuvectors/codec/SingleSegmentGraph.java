package org.gpuvectors.codec;

import java.io.IOException;
import org.apache.lucene.codecs.KnnVectorsReader;
import org.apache.lucene.codecs.perfield.PerFieldKnnVectorsFormat;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.MergeState;
import org.gpuvectors.codec.graph.GraphBuilder;
import org.gpuvectors.codec.graph.GraphField;
import org.gpuvectors.codec.graph.GraphLayout;

/**
 * The graph a merge of one segment can take over instead of building it again: when the merge has a
 * single input segment, without deleted documents, whose documents keep their numbers (no index
 * sort reorders them), its vectors keep their ordinals, so its graph, built with the same parameters,
 * is the graph a rebuild would make (the build is deterministic; only a segment built on a CPU where
 * the merge has a GPU, or the reverse, could differ, and both are valid graphs of these vectors).
 * Lucene merges a lone segment this way when a force-merge rewrites a flushed compound-file segment
 * (a single segment is too large a share of the index for a compound file): without this, every
 * one-segment index built that way paid its graph twice. A merge of several segments, or with
 * deletions, rebuilds the graph from the merged vectors.
 */
final class SingleSegmentGraph {

  private SingleSegmentGraph() {}

  /**
   * The lone input segment's graph of {@code fieldInfo} when it can be reused as the class comment
   * says, with these parameters and {@code size} merged vectors; else null.
   */
  static GraphLayout reusable(
      FieldInfo fieldInfo, MergeState mergeState, int degree, int buildDegree, int searchWidth, int size)
      throws IOException {
    if (mergeState.knnVectorsReaders.length != 1 || mergeState.liveDocs[0] != null) {
      return null;
    }
    MergeState.DocMap docMap = mergeState.docMaps[0];
    for (int doc = 0; doc < mergeState.maxDocs[0]; doc++) {
      if (docMap.get(doc) != doc) {
        return null; // renumbered (index sorting): the ordinals would change
      }
    }
    KnnVectorsReader reader = mergeState.knnVectorsReaders[0];
    if (reader instanceof PerFieldKnnVectorsFormat.FieldsReader perField) {
      reader = perField.getFieldReader(fieldInfo.name);
    }
    GraphField graph = reader instanceof GpuVectorsReader ours ? ours.graphField(fieldInfo.name) : null;
    if (graph == null
        || graph.size() != size
        || graph.degree() != degree
        || graph.buildDegree() != buildDegree
        || graph.searchWidth() != searchWidth
        || graph.seed() != GraphBuilder.SEED) {
      return null;
    }
    return new GraphLayout(degree, buildDegree, searchWidth, graph.seed(), graph.toAdjacency(), graph.seeds());
  }
}
