package org.gpuvectors.cuda.build;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.gpuvectors.cuda.DistinctFields;
import org.junit.jupiter.api.Test;

/**
 * The build steps' parameter encodings are byte for byte those of the hand-written {@code encode()} methods that the
 * declared layouts replaced (kept here, frozen, as the reference): every field set to a distinct value, pads zero.
 */
class BuildParamEncodingRegressionTest {

  private static ByteBuffer le(int bytes) {
    return ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
  }

  @Test
  void graphPruneParams() {
    GraphPruneParams p = DistinctFields.fill(new GraphPruneParams());
    ByteBuffer b = le(32);
    b.putLong(p.knn).putLong(p.out).putLong(p.n).putInt(p.k).putInt(p.degree);
    assertArrayEquals(b.array(), p.encode());
  }

  @Test
  void farthestStepParams() {
    FarthestStepParams p = DistinctFields.fill(new FarthestStepParams());
    ByteBuffer b = le(88);
    b.putLong(p.points).putLong(p.sample).putLong(p.nearest).putLong(p.scale).putLong(p.state).putLong(p.blockKeys)
        .putLong(p.blockPositions).putLong(p.count).putInt(p.dims).putInt(p.metric).putInt(p.seedCount)
        .putInt(p.limit).putFloat(p.uncovered).putInt(0); // the pad
    assertArrayEquals(b.array(), p.encode());
  }

  @Test
  void neighbourGapParams() {
    NeighbourGapParams p = DistinctFields.fill(new NeighbourGapParams());
    ByteBuffer b = le(56);
    b.putLong(p.points).putLong(p.sample).putLong(p.adjacency).putLong(p.out).putLong(p.count).putInt(p.dims)
        .putInt(p.degree).putInt(p.metric).putInt(0); // the pad
    assertArrayEquals(b.array(), p.encode());
  }

  @Test
  void reverseLinksParams() {
    ReverseLinksParams p = DistinctFields.fill(new ReverseLinksParams());
    ByteBuffer b = le(56);
    b.putLong(p.pruned).putLong(p.start).putLong(p.cursor).putLong(p.keys).putLong(p.out).putLong(p.n)
        .putInt(p.degree).putInt(0); // the pad
    assertArrayEquals(b.array(), p.encode());
  }

  @Test
  void codebookAssignParams() {
    CodebookAssignParams p = DistinctFields.fill(new CodebookAssignParams());
    ByteBuffer b = le(48);
    b.putLong(p.points).putLong(p.codebooks).putLong(p.out).putLong(p.count).putInt(p.dims).putInt(p.groups)
        .putInt(p.subDims).putInt(p.k);
    assertArrayEquals(b.array(), p.encode());
  }

  @Test
  void centroidMeansParams() {
    CentroidMeansParams p = DistinctFields.fill(new CentroidMeansParams());
    ByteBuffer b = le(64);
    b.putLong(p.points).putLong(p.assignment).putLong(p.sums).putLong(p.counts).putLong(p.means).putLong(p.count)
        .putInt(p.groups).putInt(p.subDims).putInt(p.k).putInt(p.scaleLog2);
    assertArrayEquals(b.array(), p.encode());
  }
}
