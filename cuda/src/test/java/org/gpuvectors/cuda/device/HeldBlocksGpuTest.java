package org.gpuvectors.cuda.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.gpuvectors.cuda.GpuTestCase;
import org.gpuvectors.cuda.runtime.CudaException;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import jcuda.driver.CUresult;
import org.junit.jupiter.api.Test;

/**
 * Blocks a pass holds back from reuse go back early when the device runs out of memory ({@link GpuDevice#allocate}):
 * a pass that allocates and closes temporaries worth more than the device's memory, as an ivf_pq pass over many
 * blocks of queries does, gets its memory; an allocation larger than the device still fails with the driver's error.
 */
class HeldBlocksGpuTest extends GpuTestCase {
  private static final long GIB = 1L << 30;

  /** 1 GiB blocks worth one and a half times the device's memory, each written on the pass's stream and closed. */
  private static long blocksPastTheDevice() {
    return device.totalMemoryBytes() * 3 / 2 / GIB + 1;
  }

  @Test
  void aPassAllocatingPastTheDeviceReusesTheBlocksItReturned() {
    long inUse = device.bytesInUse();
    long reclaims = device.heldBlockReclaims();
    inOnePass(() -> {
      for (long i = 0, n = blocksPastTheDevice(); i < n; i++) {
        try (DeviceBuffer b = device.allocate(GIB)) {
          device.fill32(b, (int) i); // may still run when the block is returned: an early release waits for it
        }
      }
      assertTrue(device.bytesInUse() >= inUse + GIB, "blocks returned after an early release are held back again");
    });
    assertTrue(device.heldBlockReclaims() > reclaims, "the pass ran out of memory and let its blocks go early");
    assertEquals(inUse, device.bytesInUse(), "every block back in the pool once, at the pass's end");
  }

  @Test
  void lanesOutsideASlotReuseTheBlocksTheyReturnedPastTheDevice() {
    try (GpuDevice.Scope s = device.lock()) {
      long inUse = device.bytesInUse();
      long reclaims = device.heldBlockReclaims();
      try (GpuDevice.Lanes lanes = device.lanes(2)) {
        for (long i = 0, n = blocksPastTheDevice(); i < n; i++) {
          lanes.use((int) i);
          try (DeviceBuffer b = device.allocate(GIB)) {
            device.fill32(b, (int) i);
          }
        }
      }
      assertTrue(device.heldBlockReclaims() > reclaims, "the lanes ran out of memory and let their blocks go early");
      assertEquals(inUse, device.bytesInUse(), "every block back in the pool once, when the lanes closed");
    }
  }

  @Test
  void anAllocationLargerThanTheDeviceStillFails() {
    long inUse = device.bytesInUse();
    inOnePass(() -> {
      device.allocate(GIB).close(); // held back: the device lets it go early, and still has too little
      CudaException e = assertThrows(CudaException.class, () -> device.allocate(device.totalMemoryBytes() + GIB));
      assertEquals(CUresult.CUDA_ERROR_OUT_OF_MEMORY, e.code(), e.getMessage());
      try (DeviceBuffer b = device.allocate(GIB)) {
        device.fill32(b, 1); // the pass goes on after the failed allocation
      }
    });
    assertEquals(inUse, device.bytesInUse());
  }

  /**
   * Enqueues {@code work} in a pass slot of its own, as a search pass does ({@code BatchSearch}): begin under the
   * lock, end the enqueue, wait for the pass without the lock, and give the slot back also when {@code work} fails.
   */
  private static void inOnePass(Runnable work) {
    PassSlot slot = null;
    try {
      try (GpuDevice.Scope s = device.lock()) {
        slot = device.beginPass();
        work.run();
        device.endEnqueue(slot);
      }
      device.awaitPass(slot);
    } finally {
      if (slot != null) {
        device.endPass(slot);
      }
    }
  }
}
