package org.gpuvectors.cuda.select;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.gpuvectors.cuda.CpuOracle;
import org.gpuvectors.cuda.GpuAvailability;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.device.HostRows;

/** Tests that run everywhere (no GPU needed). */
class CpuOnlyTest {

  @Test
  void availabilityNeverThrowsAndExplainsItself() {
    GpuAvailability a = GpuAvailability.get();
    assertNotNull(a.reason());
    assertFalse(a.reason().isBlank());
    System.out.println("[gpu-vectors] GPU availability: " + a.reason());
    if (!a.available()) {
      assertTrue(a.devices().isEmpty() || a.reason().startsWith("GPU kernels were not built"), a.reason());
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> GpuDevice.open(0));
      assertTrue(e.getMessage().contains(a.reason()), e.getMessage());
    }
    if (!GpuAvailability.driverLibraryPresent()) {
      assertEquals("no CUDA driver (libcuda.so.1 not found)", a.reason());
    }
  }

  @Test
  void kernelsReportedBuiltOrWhyNot() {
    String missing = GpuAvailability.kernelsMissingReason();
    if (missing != null) {
      assertTrue(missing.startsWith("GPU kernels were not built"), missing);
    }
  }

  @Test
  void kBuckets() {
    assertEquals(32, KSelect.bucket(1));
    assertEquals(32, KSelect.bucket(32));
    assertEquals(64, KSelect.bucket(33));
    assertEquals(128, KSelect.bucket(100));
    assertEquals(1024, KSelect.bucket(1000));
    assertEquals(2048, KSelect.bucket(2048));
    assertThrows(IllegalArgumentException.class, () -> KSelect.bucket(0));
    assertThrows(IllegalArgumentException.class, () -> KSelect.bucket(2049));
  }

  @Test
  void oracleSelectsExcludingNaN() {
    float[] row = {3, Float.NaN, 1, 2, Float.POSITIVE_INFINITY, 1};
    List<CpuOracle.Entry> s = CpuOracle.select(row, 0, row.length, 10, false);
    assertEquals(4, s.size());
    assertEquals(1.0, s.get(0).value());
    assertEquals(3.0, s.get(3).value());
    List<CpuOracle.Entry> l = CpuOracle.select(row, 0, row.length, 2, true);
    assertEquals(Float.POSITIVE_INFINITY, l.get(0).value());
    assertEquals(3.0, l.get(1).value());
  }

  @Test
  void oracleExactSearch() {
    float[] v = {0, 0, 1, 0, 0, 2, 3, 3};
    float[] q = {1, 0.1f};
    List<CpuOracle.Entry> l2 = CpuOracle.search(v, 4, 2, Metric.L2, q, 0, 2, null);
    assertEquals(1, l2.get(0).id());
    assertEquals(0, l2.get(1).id());
    List<CpuOracle.Entry> ip = CpuOracle.search(v, 4, 2, Metric.INNER_PRODUCT, q, 0, 1, new long[] {0b0111});
    assertEquals(1, ip.get(0).id());
    List<CpuOracle.Entry> cos = CpuOracle.search(v, 4, 2, Metric.COSINE, q, 0, 1, null);
    assertEquals(1, cos.get(0).id());
    int[] ids = {1, 0, -1};
    float[] vals = {(float) l2.get(0).value(), (float) l2.get(1).value(), 0};
    assertNull(CpuOracle.compare(l2, ids, vals, 0, 2, CpuOracle.searchTruth(v, 4, 2, Metric.L2, q, 0, null)));
  }

  @Test
  void cosineNormalisationOnHost() {
    float[] x = {3, 4, 0, 0};
    HostRows.normalize(x, 0, 2, 2);
    assertEquals(0.6f, x[0], 1e-6);
    assertEquals(0.8f, x[1], 1e-6);
    assertEquals(0f, x[2]);
  }
}
