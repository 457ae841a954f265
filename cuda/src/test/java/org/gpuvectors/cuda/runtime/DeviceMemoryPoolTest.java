package org.gpuvectors.cuda.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import jcuda.driver.CUresult;
import org.junit.jupiter.api.Test;

/**
 * The device memory pool's size classes, a buffer's single close, running out of memory and the blocks a sink holds
 * back, without a GPU ({@link FakeHeap}).
 */
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

  /** Out of memory, the pool frees its cached blocks and tries once more; with none to free it fails as the driver. */
  @Test
  void outOfMemoryFreesTheCacheAndRetriesOnce() {
    FakeHeap heap = new FakeHeap(2048);
    DeviceMemoryPool pool = new DeviceMemoryPool(heap);
    pool.allocate(1024).close();
    DeviceBuffer kept = pool.allocate(512);
    assertEquals(1024, pool.bytesCached(), "the first block went back to the cache, not to the device");
    DeviceBuffer bigger = pool.allocate(1280); // fits beside the cached block only once that is freed
    assertEquals(0, pool.bytesCached());
    assertEquals(512 + 1280, heap.used());
    CudaException e = assertThrows(CudaException.class, () -> pool.allocate(512));
    assertEquals(CUresult.CUDA_ERROR_OUT_OF_MEMORY, e.code());
    kept.close();
    bigger.close();
    pool.close();
    assertEquals(0, heap.used(), "every block freed once");
  }

  /**
   * Blocks held in a sink are not the pool's to free when memory runs out (the bug: a pass looping over many blocks
   * of queries ran the device out of memory); once the device lets them go ({@link DeviceMemoryPool#releaseHeld})
   * they are lent again, blocks returned afterwards keep waiting in the sink, and the sink's final release returns
   * only those, once.
   */
  @Test
  void heldBlocksGoBackEarlyAndOnlyOnce() {
    FakeHeap heap = new FakeHeap(2048);
    DeviceMemoryPool pool = new DeviceMemoryPool(heap);
    ArrayDeque<long[]> sink = new ArrayDeque<>();
    pool.deferTo(sink);
    DeviceBuffer a = pool.allocate(1024);
    DeviceBuffer b = pool.allocate(1024);
    long aAddress = a.address();
    long bAddress = b.address();
    a.close();
    b.close();
    assertEquals(2048, pool.bytesInUse(), "held in the sink: still lent out");
    CudaException e = assertThrows(CudaException.class, () -> pool.allocate(1024));
    assertEquals(CUresult.CUDA_ERROR_OUT_OF_MEMORY, e.code(), "the pool's own retry cannot free held blocks");

    assertEquals(2048, pool.releaseHeld(sink));
    assertTrue(sink.isEmpty());
    assertTrue(pool.returnsTo(sink), "blocks returned later still wait in the sink");
    assertEquals(0, pool.bytesInUse());
    assertEquals(2048, pool.bytesCached());

    DeviceBuffer c = pool.allocate(1000);
    assertEquals(bAddress, c.address(), "a block held back is lent again once it went back");
    c.close();
    assertEquals(1024, pool.bytesInUse(), "returned after the early release: held again");
    DeviceBuffer d = pool.allocate(1000);
    assertEquals(aAddress, d.address(), "the block held again is not lent");
    d.close();

    pool.deferTo(null);
    pool.releaseAll(sink); // the pass's end
    assertEquals(0, pool.bytesInUse(), "each block released once");
    assertEquals(2048, pool.bytesCached());
    assertEquals(0, pool.liveBlocks());
    pool.close();
    assertEquals(0, heap.used(), "each block freed once");
  }

  @Test
  void aSinkIsNotReleasedIntoItself() {
    DeviceMemoryPool pool = new DeviceMemoryPool(new FakeHeap(1 << 20));
    ArrayDeque<long[]> sink = new ArrayDeque<>();
    pool.deferTo(sink);
    pool.allocate(256).close();
    assertThrows(IllegalStateException.class, () -> pool.releaseAll(sink));
  }
}
