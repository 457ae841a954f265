package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Queries handed over as rows ({@link SearchGroup#ofRows}): what reaches the device through the
 * pinned staging buffer is exactly the row-major queries (in one copy and in many, filled on one
 * thread and on the pool), and a pass over rows returns exactly what the same queries row-major
 * return. Skips (visibly) without a GPU.
 */
class QueryRowsGpuTest extends GpuTestCase {

  private static DeviceIndex hostOnly(int dims) {
    return new DeviceIndex() {
      public int size() {
        return 1;
      }

      public int dims() {
        return dims;
      }

      public Metric metric() {
        return Metric.L2;
      }

      public long deviceBytes() {
        return 0;
      }

      public void close() {}
    };
  }

  private static float[][] rows(int n, int dims, Random r) {
    float[][] rows = new float[n][dims];
    for (float[] row : rows) {
      for (int d = 0; d < dims; d++) {
        row[d] = (float) r.nextGaussian();
      }
    }
    return rows;
  }

  private static float[] rowMajor(float[][] rows) {
    int dims = rows[0].length;
    float[] out = new float[rows.length * dims];
    for (int q = 0; q < rows.length; q++) {
      System.arraycopy(rows[q], 0, out, q * dims, dims);
    }
    return out;
  }

  @Test
  void stagedRowsReachTheDeviceAsTheyAre() {
    Random r = new Random(11);
    for (int dims : new int[] {37, 784}) {
      for (int n : new int[] {1, 63, GpuDevice.PARALLEL_STAGING_ROWS + 476}) {
        float[][] rows = rows(n, dims, r);
        float[] expected = rowMajor(rows);
        SearchGroup group = SearchGroup.ofRows(hostOnly(dims), rows, n, 1, 1, null, null);
        // one copy, and copies of 10 rows (the last one short)
        for (long bytesPerCopy : new long[] {PinnedHostBuffer.MAX_BYTES, 4L * dims * 10}) {
          long offset = 4L * 3 * dims; // behind other data, as a group after others in a pass
          try (GpuDevice.Scope s = device.lock(); DeviceBuffer buffer = device.allocate(offset + 4L * expected.length)) {
            device.uploadQueries(group, buffer, offset, bytesPerCopy);
            float[] back = new float[expected.length];
            device.download(buffer, offset, back, 0, back.length);
            assertArrayEquals(expected, back, 0f, "dims=" + dims + " n=" + n + " bytesPerCopy=" + bytesPerCopy);
          }
        }
      }
    }
  }

  @Test
  void aPassOverRowsEqualsThePassOverTheSameQueriesRowMajor() {
    Random r = new Random(12);
    int n = 3000;
    int dims = 48;
    float[] vectors = GpuFlatIndexGpuTest.random(n * dims, r);
    for (Metric metric : Metric.values()) {
      try (GpuFlatIndex index = GpuFlatIndex.upload(device, vectors, n, dims, metric)) {
        for (int nq : new int[] {5, 100, 1500}) { // packed, and uploaded directly (>= 64 queries, not cosine)
          float[][] rows = rows(nq, dims, r);
          float[] packed = rowMajor(rows);
          long[] mask = new long[SearchGroup.maskWords(n)];
          for (int i = 0; i < n; i += 1 + r.nextInt(3)) {
            mask[i >>> 6] |= 1L << i;
          }
          SearchResult[] byRows = BatchSearch.run(device, List.of(
              SearchGroup.ofRows(index, rows, nq, 10, 1, null, null),
              SearchGroup.ofRows(index, rows, nq, 10, 1, mask, null)));
          SearchResult[] byArray = BatchSearch.run(device, List.of(
              new SearchGroup(index, packed, nq, 10, null, null),
              new SearchGroup(index, packed, nq, 10, mask, null)));
          for (int g = 0; g < 2; g++) {
            for (int q = 0; q < nq; q++) {
              String where = metric + " nq=" + nq + " group " + g + " query " + q;
              assertEquals(byArray[g].count(q), byRows[g].count(q), where);
              for (int i = 0; i < byArray[g].count(q); i++) {
                assertEquals(byArray[g].id(q, i), byRows[g].id(q, i), where + " rank " + i);
                assertEquals(byArray[g].distance(q, i), byRows[g].distance(q, i), 0f, where + " rank " + i);
              }
            }
          }
        }
      }
    }
  }
}
