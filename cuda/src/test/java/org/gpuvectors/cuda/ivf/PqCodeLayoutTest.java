package org.gpuvectors.cuda.ivf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The device's interleaved code layout ({@link GpuIvfPqIndex#interleave}, common.cuh's pqCodeChunk) against its
 * definition, byte by byte: for code sizes below, at and past a 16-byte chunk, n not a multiple of the group, and the
 * groups written over several slabs (the upload's loop).
 */
class PqCodeLayoutTest {

  @Test
  void everyCodeByteLandsWhereTheKernelsReadIt() {
    Random r = new Random(7);
    for (int m : new int[] {1, 6, 16, 30, 96, 98, 196}) {
      for (int n : new int[] {1, 31, 32, 70, 129}) {
        byte[] codes = new byte[n * m];
        r.nextBytes(codes);
        int chunks = (m + 15) / 16;
        int groups = (n + 31) / 32;
        long bytes = GpuIvfPqIndex.deviceCodeBytes(n, m);
        assertEquals((long) groups * 32 * chunks * 16, bytes, "m " + m + ", n " + n);
        byte[] device = new byte[(int) bytes];
        int groupBytes = chunks * 32 * 16;
        int groupsPerSlab = 2;
        byte[] slab = new byte[groupsPerSlab * groupBytes];
        Arrays.fill(slab, (byte) 0x5a);  // stale bytes of an earlier slab must not survive
        for (int g0 = 0; g0 < groups; g0 += groupsPerSlab) {
          int count = Math.min(groupsPerSlab, groups - g0);
          GpuIvfPqIndex.interleave(codes, n, m, g0, count, slab);
          System.arraycopy(slab, 0, device, g0 * groupBytes, count * groupBytes);
        }
        byte[] expected = new byte[(int) bytes];
        for (int v = 0; v < n; v++) {
          for (int j = 0; j < m; j++) {
            // common.cuh: chunk j / 16 of position v is the 16-byte unit ((v / 32) * chunks + j / 16) * 32 + v % 32
            int unit = ((v / 32) * chunks + j / 16) * 32 + v % 32;
            expected[unit * 16 + j % 16] = codes[v * m + j];
          }
        }
        for (int i = 0; i < bytes; i++) {
          assertEquals(expected[i], device[i], "m " + m + ", n " + n + ", byte " + i);
        }
      }
    }
  }
}
