package org.gpuvectors.cuda.runtime;

import java.util.HashMap;
import java.util.Map;
import jcuda.driver.CUresult;

/**
 * A {@link DeviceHeap} of {@code capacity} bytes of made-up addresses, for the pool's tests without a GPU: it runs
 * out of memory as cuMemAlloc would, and fails a free of a block it did not hand out (or freed already).
 */
final class FakeHeap implements DeviceHeap {
  private final long capacity;
  private final Map<Long, Long> blocks = new HashMap<>(); // address -> bytes
  private long next = 1 << 20;
  private long used;

  FakeHeap(long capacity) {
    this.capacity = capacity;
  }

  @Override
  public int allocate(long bytes, long[] address) {
    if (used + bytes > capacity) {
      return CUresult.CUDA_ERROR_OUT_OF_MEMORY;
    }
    address[0] = next;
    blocks.put(next, bytes);
    next += bytes;
    used += bytes;
    return CUresult.CUDA_SUCCESS;
  }

  @Override
  public int free(long address) {
    Long bytes = blocks.remove(address);
    if (bytes == null) {
      return CUresult.CUDA_ERROR_INVALID_VALUE;
    }
    used -= bytes;
    return CUresult.CUDA_SUCCESS;
  }

  /** Bytes allocated and not freed. */
  long used() {
    return used;
  }
}
