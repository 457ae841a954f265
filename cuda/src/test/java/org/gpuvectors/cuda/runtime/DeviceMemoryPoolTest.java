package org.gpuvectors.cuda.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The device memory pool's size classes and a buffer's single close, without a GPU. */
class DeviceMemoryPoolTest {

  @Test
  void sizeClassesBoundWaste() {
    assertEquals(256, DeviceMemoryPool.sizeClass(1));
    assertEquals(256, DeviceMemoryPool.sizeClass(256));
    for (long b = 257; b < 1 << 24; b = b * 3 / 2 + 7) {
      long c = DeviceMemoryPool.sizeClass(b);
      assertTrue(c >= b && c <= b * 1.25 + 256, b + " -> " + c);
      assertEquals(c, DeviceMemoryPool.sizeClass(c), "a size class maps to itself");
    }
  }

  @Test
  void bufferClosesOnceAndPoolCountsIt() {
    DeviceMemoryPool pool = new DeviceMemoryPool();
    DeviceBuffer b = new DeviceBuffer(pool, 4096, 256, 200);
    b.close();
    b.close();
    assertEquals(256, pool.bytesCached());
    assertThrows(IllegalStateException.class, b::address);
  }
}
