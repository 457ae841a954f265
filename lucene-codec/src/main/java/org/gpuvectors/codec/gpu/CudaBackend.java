package org.gpuvectors.codec.gpu;

import java.io.IOException;
import java.util.List;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.cuda.BatchSearch;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.GpuDevice;
import org.gpuvectors.cuda.GpuFlatIndex;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchGroup;
import org.gpuvectors.cuda.SearchResult;

/** The GPU as a {@link GpuBackend}: owns the {@link GpuDevice} it opens and closes it. */
final class CudaBackend implements GpuBackend {

  private final GpuDevice device;

  CudaBackend(GpuDevice device) {
    this.device = device;
  }

  @Override
  public String deviceName() {
    return device.name();
  }

  @Override
  public long totalMemoryBytes() {
    return device.totalMemoryBytes();
  }

  @Override
  public long estimateBytes(int size, int dims, Metric metric) {
    return 4L * Math.max(1, size) * dims + (metric == Metric.L2 ? 4L * Math.max(1, size) : 0);
  }

  @Override
  public DeviceIndex upload(FloatVectorValues vectors, Metric metric) throws IOException {
    int dims = vectors.dimension();
    // streamed a slab at a time: the segment's vectors never sit whole on the Java heap
    return GpuFlatIndex.upload(
        device,
        vectors.size(),
        dims,
        metric,
        (first, count, dst) -> {
          for (int i = 0; i < count; i++) {
            System.arraycopy(vectors.vectorValue(first + i), 0, dst, i * dims, dims);
          }
        });
  }

  @Override
  public SearchResult[] search(List<SearchGroup> groups, long[] timing) {
    return BatchSearch.run(device, groups, timing);
  }

  @Override
  public void close() {
    device.close();
  }

  @Override
  public String toString() {
    return "CudaBackend[" + device + "]";
  }
}
