package org.gpuvectors.codec.gpu;

import java.io.Closeable;
import java.io.IOException;
import java.util.List;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchGroup;
import org.gpuvectors.cuda.SearchResult;

/**
 * The device that {@link GpuSearchService} runs on: uploads segment fields and runs batches of
 * searches over them. {@link CudaBackend} is the GPU; tests put doubles here to inject faults (out of
 * memory, failing launches, sticky errors) on machines without a GPU.
 */
public interface GpuBackend extends Closeable {

  /** The device's name, for stats and logs. */
  String deviceName();

  /** Device memory in bytes (the memory budget is a fraction of it). */
  long totalMemoryBytes();

  /** Device bytes that {@link #upload} will take for these vectors (the residency gate asks first). */
  long estimateBytes(int size, int dims, Metric metric);

  /** Makes a segment field's vectors resident. May run concurrently with {@link #search}. */
  DeviceIndex upload(FloatVectorValues vectors, Metric metric) throws IOException;

  /**
   * Runs a batch of searches as one pass; results in group order. One batch at a time. Adds the
   * pass's host enqueue time to {@code timing[0]} and its wait for the device to {@code timing[1]}
   * (nanoseconds; a backend that cannot tell leaves them).
   */
  SearchResult[] search(List<SearchGroup> groups, long[] timing);

  /** Frees the device; indexes still open are closed by their owners first. */
  @Override
  void close();
}
