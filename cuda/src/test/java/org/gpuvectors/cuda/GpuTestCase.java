package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Locale;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.gpuvectors.cuda.device.GpuDevice;

/**
 * Base of the GPU tests: one device per test class, opened only when a GPU is usable and closed
 * after the class. Without a GPU every test is skipped with the reason, unless a GPU is required
 * (system property {@code gv.requireGpu=true} or environment {@code GV_REQUIRE_GPU=1}, as on the GPU
 * machine): then a missing or broken GPU (no driver, no fatbin, JCuda natives, CUDA init, device open)
 * fails every test with the reason instead of skipping it.
 */
public abstract class GpuTestCase {
  public static GpuDevice device;
  private static String openFailure;

  /** True when a missing GPU must fail the tests rather than skip them. */
  static boolean gpuRequired() {
    String p = System.getProperty("gv.requireGpu");
    if (p != null && !p.isBlank()) {
      return Boolean.parseBoolean(p.trim());
    }
    String e = System.getenv("GV_REQUIRE_GPU");
    return e != null && (e.trim().equals("1") || e.trim().toLowerCase(Locale.ROOT).equals("true"));
  }

  @BeforeAll
  static void openDevice() {
    openFailure = null;
    if (GpuAvailability.get().available()) {
      try {
         device = GpuDevice.open(0);
      } catch (RuntimeException | LinkageError e) {
        openFailure = "GPU reported usable but GpuDevice.open(0) failed: " + e;
        if (!gpuRequired()) {
          return;  // each test is skipped with this reason
        }
        throw new AssertionError(openFailure + " (gv.requireGpu)", e);
      }
    } else if (!gpuRequired()) {
      System.out.println("[gpu-vectors] GPU tests skipped (set -Dgv.requireGpu=true to fail instead): "
          + GpuAvailability.get().reason());
    }
  }

  @BeforeEach
  void needsGpu() {
    GpuAvailability a = GpuAvailability.get();
    String reason = !a.available() ? a.reason() : openFailure;
    if (reason == null) {
      return;
    }
    if (gpuRequired()) {
      fail("GPU required (gv.requireGpu / GV_REQUIRE_GPU) but not usable: " + reason);
    }
    assumeTrue(false, "GPU test skipped: " + reason);
  }

  @AfterAll
  static void closeDevice() {
    if (device != null) {
      device.close();
       device = null;
    }
  }
}
