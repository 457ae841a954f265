package org.gpuvectors.cuda.runtime;

import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;

/**
 * Where a {@link DeviceMemoryPool}'s blocks come from and go back to: the CUDA driver ({@link #DRIVER}), or in the
 * pool's tests a stand-in that runs out of memory when told, so that the pool's bookkeeping is tested without a GPU.
 */
interface DeviceHeap {
  /** cuMemAlloc: the driver's result code ({@code CUresult}); on success the block's address is in {@code address[0]}. */
  int allocate(long bytes, long[] address);

  /** cuMemFree: the driver's result code. */
  int free(long address);

  DeviceHeap DRIVER = new DeviceHeap() {
    @Override
    public int allocate(long bytes, long[] address) {
      CUdeviceptr p = new CUdeviceptr();
      int rc = JCudaDriver.cuMemAlloc(p, bytes);
      address[0] = Driver.address(p);
      return rc;
    }

    @Override
    public int free(long address) {
      return JCudaDriver.cuMemFree(Driver.deviceptr(address));
    }
  };
}
