package org.gpuvectors.cuda.ivf;

import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.GpuTestCase;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.PassConfig;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.device.HostRows;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.flat.GpuFlatIndexGpuTest;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.QueryUploads;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.PinnedHostBuffer;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Queries handed over as rows ({@link SearchGroup#ofRows}): what reaches the device through the
 * pinned staging buffer is exactly the row-major queries (in one copy and in many, filled on one
 * thread and on the pool), and a pass over rows returns exactly what the same queries row-major
 * return. Large groups' queries copied block by block on the pass's copy stream ({@link QueryUploads}) through a
 * pinned buffer of a few rows give exactly the results of the same pass through a buffer of the whole batch, and the
 * flat groups' results are the CPU oracle's. Skips (visibly) without a GPU.
 */
class QueryRowsGpuTest extends GpuTestCase {

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
      for (int n : new int[] {1, 63, HostRows.PARALLEL_STAGING_ROWS + 476}) {
        float[][] rows = rows(n, dims, r);
        float[] expected = rowMajor(rows);
        // one copy, and copies of 10 rows (the last one short)
        for (long bytesPerCopy : new long[] {PinnedHostBuffer.MAX_BYTES, 4L * dims * 10}) {
          long offset = 4L * 3 * dims; // behind other data, as a group after others in a pass
          try (GpuDevice.Scope s = device.lock(); DeviceBuffer buffer = device.allocate(offset + 4L * expected.length)) {
            device.uploadRows(rows, n, dims, buffer, offset, bytesPerCopy);
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
              SearchGroup.ofRows(index, rows, nq, 10, SearchParams.FLAT, null, null),
              SearchGroup.ofRows(index, rows, nq, 10, SearchParams.FLAT, mask, null)));
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

  /**
   * Passes whose large groups' queries go up block by block on the copy stream, through a pinned buffer of a few
   * rows (reused many times, so the host waits for earlier copies: a device of its own with {@link
   * PassConfig#queryStagingBytes} small) and of the whole batch (the default device): the same ids and distances, bit
   * for bit, and the flat groups' as the CPU oracle finds them. Flat groups of several GEMM blocks in FP32 and with
   * TF32 candidates, as an array and as rows, with a mask, next to an ivf_flat group of the same pass (which takes all
   * its queries before its first kernel) and ivf_pq groups re-ranked on the device (which ask for their blocks one by
   * one: {@link GpuIvfPqIndex#queryBlocks}; one of them with 2,048 candidates a query, so blocks of 2,048 queries after
   * the first).
   */
  @Test
  void queriesCopiedBlockByBlockThroughAFewRowsGiveTheResultsOfOneCopy() throws java.io.IOException {
    Random r = new Random(13);
    int n = 4000;
    int dims = 24;
    int nq = 2 * GpuFlatIndex.MAX_QUERY_BLOCK + 300; // three blocks (GpuFlatIndex.queryBlocks)
    float[] vectors = GpuIvfFlatIndexGpuTest.clustered(n, dims, r);
    GpuIvfFlatIndexGpuTest.Data data = GpuIvfFlatIndexGpuTest.lists(vectors, n, dims, Metric.L2, r);
    GpuIvfPqIndexGpuTest.Pq quantized = GpuIvfPqIndexGpuTest.quantize(data, 4, 8, r);
    float[][] rows = rows(nq, dims, r);
    float[] packed = rowMajor(rows);
    long[] mask = new long[SearchGroup.maskWords(n)];
    for (int i = 0; i < n; i += 1 + r.nextInt(3)) {
      mask[i >>> 6] |= 1L << i;
    }
    GpuConfig fewRows =
        GpuConfig.builder().pass(PassConfig.defaults().withQueryStagingBytes(4L * dims * 1000 + 12)).build();
    SearchResult[][] results = new SearchResult[2][];
    try (GpuDevice small = GpuDevice.open(0, fewRows)) {
      for (int run = 0; run < 2; run++) {
        GpuDevice d = run == 0 ? small : device;
        try (GpuFlatIndex fp32 = GpuFlatIndex.upload(d, vectors, n, dims, Metric.L2);
             GpuFlatIndex tf32 = GpuFlatIndex.upload(d, vectors, n, dims, Metric.INNER_PRODUCT);
             GpuIvfFlatIndex ivf = GpuIvfFlatIndex.upload(d, data.lists(), dims, Metric.L2, data.rowsInListOrder());
             GpuIvfPqIndex pq = GpuIvfPqIndexGpuTest.uploadWithRawVectors(d, quantized, data, 8)) {
          tf32.setPrecision(GpuFlatIndex.Precision.TF32_RERANK);
          List<SearchGroup> pass = List.of(
              new SearchGroup(fp32, packed, nq, 10, null, null),
              SearchGroup.ofRows(fp32, rows, nq, 7, SearchParams.FLAT, mask, null),
              SearchGroup.ofRows(tf32, rows, nq, 10, SearchParams.FLAT, null, null),
              SearchGroup.ofRows(ivf, rows, nq, 10, new SearchParams.Ivf(4), null, null),
              SearchGroup.ofRows(pq, rows, nq, 10, new SearchParams.Ivf(4), mask, null),
              new SearchGroup(pq, packed, nq, 256, new SearchParams.Ivf(4), null, null));
          results[run] = BatchSearch.run(d, pass);
        }
        assertEquals(0, d.bytesInUse(), "all device buffers returned to the pool");
      }
    }
    SearchResult[] few = results[0];
    SearchResult[] whole = results[1];
    for (int g = 0; g < whole.length; g++) {
      for (int q = 0; q < nq; q++) {
        String where = "group " + g + " query " + q;
        assertEquals(whole[g].count(q), few[g].count(q), where);
        for (int i = 0; i < whole[g].count(q); i++) {
          assertEquals(whole[g].id(q, i), few[g].id(q, i), where + " rank " + i);
          assertEquals(whole[g].distance(q, i), few[g].distance(q, i), 0f, where + " rank " + i);
        }
      }
    }
    // and right, not only the same: queries from every block of each flat group against the CPU oracle
    for (int q = 0; q < nq; q += 97) {
      assertNull(GpuFlatIndexGpuTest.compareOne(few[0], vectors, n, dims, Metric.L2, packed, q, 10, null), "q " + q);
      assertNull(GpuFlatIndexGpuTest.compareOne(few[1], vectors, n, dims, Metric.L2, packed, q, 7, mask), "q " + q);
      assertNull(GpuFlatIndexGpuTest.compareOne(few[2], vectors, n, dims, Metric.INNER_PRODUCT, packed, q, 10,
          null), "q " + q);
    }
  }
}
