package org.gpuvectors.codec.ivf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.Metric;
import org.junit.jupiter.api.Test;

class IvfBuilderTests {

  @Test
  void longListsTrainOnMoreThanTheMinimumPerListAndRecordIt() throws IOException {
    // 30,000 vectors in 10 lists of 3,000: 30,000 / 15 iterations = 2,000 points, between 64 x 10 and 256 x 10 (the
    // old rule stopped at 64 x 10 = 640); at 5 iterations 6,000, capped at 2,560
    FloatVectorValues vectors = randomVectors(30_000, 8, 5);
    assertEquals(new IvfBuilder.Training(2_000, 15, 42),
        IvfBuilder.build(vectors, 10, Metric.L2, 15, 42, Assigner.CPU).training());
    assertEquals(new IvfBuilder.Training(2_560, 5, 42),
        IvfBuilder.build(vectors, 10, Metric.L2, 5, 42, Assigner.CPU).training());
  }

  private static FloatVectorValues randomVectors(int n, int dims, long seed) {
    Random random = new Random(seed);
    List<float[]> rows = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      float[] v = new float[dims];
      for (int d = 0; d < dims; d++) {
        v[d] = (float) random.nextGaussian();
      }
      rows.add(v);
    }
    return FloatVectorValues.fromFloats(rows, dims);
  }
}
