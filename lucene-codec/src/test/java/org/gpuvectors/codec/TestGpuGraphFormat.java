package org.gpuvectors.codec;

import java.util.Map;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.tests.util.TestUtil;
import org.gpuvectors.codec.graph.GraphBuilder;

/**
 * Lucene's conformance suite for vector formats, run with every vector field a {@code graph} field
 * and no size threshold: every segment with float or byte vectors gets a graph (k-NN graph, pruning and
 * reverse links at flush and merge, remapped under index sorting, rebuilt from the merged vectors),
 * and every float and byte search walks it. The beam is as wide as the schema allows ({@code search_width}
 * 1024, wider than the suite's segments): the suite checks exact top-k hits in places, and the recall
 * of narrower beams is measured by {@link GraphTests}, not here. On the GPU machine the searches run
 * on the GPU's beam search (the parent's check).
 */
public class TestGpuGraphFormat extends TestGpuVectorsFormat {

  @Override
  protected Codec getCodec() {
    IndexParams graph = new IndexParams(IndexType.GRAPH, Map.of(IndexParams.SEARCH_WIDTH, GraphBuilder.MAX_SEARCH_WIDTH));
    return TestUtil.alwaysKnnVectorsFormat(new GpuVectorsFormat(graph, 0));
  }

  @Override
  public void testToString() {
    assertTrue(new GpuVectorsFormat(new IndexParams(IndexType.GRAPH, Map.of()), 0).toString()
        .contains("unmarkedFields=graph{}, ivfMinVectors=0"));
  }
}
