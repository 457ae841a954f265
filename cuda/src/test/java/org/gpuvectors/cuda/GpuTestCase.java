package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/**
 * Base of the GPU tests: one device per test class, opened only when a GPU is usable and closed
 * after the class; without a GPU every test is skipped with the reason.
 */
abstract class GpuTestCase {
  static GpuDevice device;

  @BeforeAll
  static void openDevice() {
    if (GpuAvailability.get().available()) {
      device = GpuDevice.open(0);
    }
  }

  @BeforeEach
  void needsGpu() {
    GpuAvailability a = GpuAvailability.get();
    assumeTrue(a.available(), "GPU test skipped: " + a.reason());
  }

  @AfterAll
  static void closeDevice() {
    if (device != null) {
      device.close();
      device = null;
    }
  }
}
