package org.gpuvectors.codec;

import java.util.Map;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.tests.util.TestUtil;

/**
 * Lucene's conformance suite for vector formats, run with every vector field an {@code ivf_pq} field
 * (default {@code pq_m} and {@code pq_bits}: any dimension the suite draws) and no size threshold:
 * every segment with float or byte vectors gets lists and codes (k-means and codebooks at flush and
 * merge, lists and codes remapped under index sorting, rebuilt from the merged vectors), and every
 * float and byte search scans codes (float ones on the GPU when there is one) and re-ranks with the
 * raw vectors. Every list is probed ({@code nprobe} = the largest {@code nlist}); the re-ranking keeps 4 x k candidates, which is enough for what the suite
 * checks of searches (as many hits as asked, in descending exact scores, visit limits, deletions),
 * so no test is overridden for the lossy codes. Exactness with every candidate re-ranked, and recall,
 * are {@link IvfPqTests}'.
 */
public class TestGpuIvfPqFormat extends TestGpuVectorsFormat {

  @Override
  protected Codec getCodec() {
    IndexParams pq = new IndexParams(IndexType.IVF_PQ, Map.of(IndexParams.NPROBE, 1 << 16));
    return TestUtil.alwaysKnnVectorsFormat(new GpuVectorsFormat(pq, 0));
  }

  @Override
  public void testToString() {
    assertTrue(new GpuVectorsFormat(new IndexParams(IndexType.IVF_PQ, Map.of()), 0).toString()
        .contains("unmarkedFields=ivf_pq{}, ivfMinVectors=0"));
  }
}
