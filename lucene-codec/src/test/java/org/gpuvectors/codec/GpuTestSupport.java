package org.gpuvectors.codec;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Locale;
import org.gpuvectors.cuda.GpuAvailability;

/**
 * How the codec's GPU tests treat a missing GPU: skipped with the reason on machines without one
 * (CI), failed when the run demands a GPU (the GPU bundle sets {@code -Dgv.requireGpu=true} or
 * {@code GV_REQUIRE_GPU=1}): there a missing fatbin, JCuda natives or CUDA init is a broken build.
 */
public final class GpuTestSupport {

  private GpuTestSupport() {}

  public static boolean gpuRequired() {
    String env = System.getenv("GV_REQUIRE_GPU");
    return Boolean.getBoolean("gv.requireGpu")
        || (env != null && (env.equals("1") || env.toLowerCase(Locale.ROOT).equals("true")));
  }

  /** Skips (or, when a GPU is required, fails) the test unless a GPU is usable. */
  public static void assumeGpuOrFail(GpuAvailability availability) {
    if (availability.available()) {
      return;
    }
    if (gpuRequired()) {
      fail("a GPU is required here (gv.requireGpu / GV_REQUIRE_GPU) but none is usable: " + availability.reason());
    }
    assumeTrue(false, () -> "no GPU: " + availability.reason());
  }
}
