package org.gpuvectors.codec;

import static org.apache.lucene.search.DocIdSetIterator.NO_MORE_DOCS;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.lucene.codecs.KnnVectorsReader;
import org.apache.lucene.codecs.perfield.PerFieldKnnVectorsFormat;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.index.MergeState;
import org.apache.lucene.util.BitSetIterator;
import org.apache.lucene.util.FixedBitSet;
import org.gpuvectors.codec.graph.GraphField;
import org.gpuvectors.codec.graph.GraphMerge;

/**
 * The graphs of the segments a merge reads, for a merge's graph build to start from ({@link GraphMerge}): per input
 * segment with vectors of the field, its graph (where our format built one), its vectors, and each of its ordinals'
 * ordinal in the merged segment. Merged ordinals follow the merged documents in order (deleted documents dropped, an
 * index sort applied), as {@link MergedVectorsFile} writes the merged vectors.
 */
final class MergedGraphs {

  private MergedGraphs() {}

  /** The merge of the field's graphs into {@code mergedSize} vectors, or null where it does not pay ({@link GraphMerge#of}). */
  static GraphMerge of(FieldInfo fieldInfo, MergeState mergeState, int mergedSize) throws IOException {
    String field = fieldInfo.name;
    int readers = mergeState.knnVectorsReaders.length;
    FloatVectorValues[] vectors = new FloatVectorValues[readers];
    int[][] newDocs = new int[readers][];
    FixedBitSet mergedDocs = new FixedBitSet(mergeState.segmentInfo.maxDoc());
    for (int i = 0; i < readers; i++) {
      FieldInfo info = mergeState.fieldInfos[i].fieldInfo(field);
      KnnVectorsReader reader = mergeState.knnVectorsReaders[i];
      if (reader == null || info == null || info.hasVectorValues() == false) {
        continue;
      }
      vectors[i] = GpuVectorsReader.floatView(reader, info);
      if (vectors[i] == null) {
        continue;
      }
      // each ordinal's document in the merged segment (-1: deleted)
      int[] docs = newDocs[i] = new int[vectors[i].size()];
      KnnVectorValues.DocIndexIterator it = vectors[i].iterator();
      for (int doc = it.nextDoc(); doc != NO_MORE_DOCS; doc = it.nextDoc()) {
        int newDoc = mergeState.docMaps[i].get(doc);
        docs[it.index()] = newDoc;
        if (newDoc >= 0) {
          mergedDocs.set(newDoc);
        }
      }
    }
    if (mergedDocs.cardinality() != mergedSize) {
      throw new IllegalStateException("field [" + field + "]: " + mergedDocs.cardinality()
          + " merged documents with vectors, but " + mergedSize + " merged vectors");
    }
    // merged ordinal = rank of the merged document among those with a vector
    int[] ordOfDoc = new int[mergedDocs.length()];
    Arrays.fill(ordOfDoc, -1);
    int ord = 0;
    BitSetIterator docs = new BitSetIterator(mergedDocs, mergedSize);
    for (int doc = docs.nextDoc(); doc != NO_MORE_DOCS; doc = docs.nextDoc()) {
      ordOfDoc[doc] = ord++;
    }
    List<GraphMerge.Segment> segments = new ArrayList<>();
    for (int i = 0; i < readers; i++) {
      if (vectors[i] == null) {
        continue;
      }
      int[] toMerged = newDocs[i];
      for (int o = 0; o < toMerged.length; o++) {
        toMerged[o] = toMerged[o] < 0 ? -1 : ordOfDoc[toMerged[o]];
      }
      KnnVectorsReader reader = mergeState.knnVectorsReaders[i];
      if (reader instanceof PerFieldKnnVectorsFormat.FieldsReader perField) {
        reader = perField.getFieldReader(field);
      }
      GpuVectorsReader ours = reader instanceof GpuVectorsReader r ? r : null;
      GraphField graph = ours == null ? null : ours.graphField(field);
      segments.add(new GraphMerge.Segment(graph, vectors[i], toMerged,
          graph == null ? null : ours.viewScorer(field), fieldInfo.getVectorSimilarityFunction()));
    }
    return GraphMerge.of(segments, mergedSize);
  }
}
