package org.gpuvectors.cuda;

import org.gpuvectors.cuda.runtime.DeviceBuffer;

/**
 * What every {@link DeviceIndex} shares: its device, its shape (vectors, floats per vector, metric) and
 * its closing. {@link #close} returns the index's device memory once, under the device lock, or
 * nothing when the device went first (node shutdown: its context took the memory with it); searches
 * after it fail ({@link #ensureOpen}).
 */
public abstract class ResidentIndex implements DeviceIndex {

  final GpuDevice device;
  final int n;
  final int dims;
  final Metric metric;
  private boolean closed;

  ResidentIndex(GpuDevice device, int n, int dims, Metric metric) {
    this.device = device;
    this.n = n;
    this.dims = dims;
    this.metric = metric;
  }

  @Override
  public final int size() {
    return n;
  }

  @Override
  public final int dims() {
    return dims;
  }

  @Override
  public final Metric metric() {
    return metric;
  }

  /** Throws when the index was closed; callers hold the device lock. */
  final void ensureOpen() {
    if (closed) {
      throw new IllegalStateException(getClass().getSimpleName() + " closed");
    }
  }

  /** Returns the index's device memory to the pool. */
  @Override
  public final void close() {
    if (device.isClosed()) {
      closed = true; // the device went first (node shutdown): its context took the memory with it
      return;
    }
    try (GpuDevice.Scope s = device.lock()) {
      if (!closed) {
        closed = true;
        device.passGraphs().evict(this); // captured passes read the index's buffers
        freeDeviceMemory();
      }
    }
  }

  /** Frees what the index holds on the device; called once, by {@link #close}, under the device lock. */
  abstract void freeDeviceMemory();

  /**
   * Frees a flat index and device buffers (nulls skipped): what an index owns, also when its upload
   * fails half way.
   */
  static void free(GpuDevice device, GpuFlatIndex flat, DeviceBuffer... buffers) {
    if (flat != null) {
      flat.close();
    }
    try (GpuDevice.Scope s = device.lock()) {
      for (DeviceBuffer b : buffers) {
        if (b != null) {
          b.close();
        }
      }
    }
  }
}
