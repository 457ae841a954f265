package org.gpuvectors.cuda;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import jcuda.Pointer;
import jcuda.driver.CUfunction;
import jcuda.driver.CUfunction_attribute;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;

/**
 * The gpu-vectors fatbin loaded once into a device's context (cuModuleLoadData from the classpath
 * resource bytes) and its kernels by stable extern "C" name.
 *
 * <p>System property {@code gv.cuda.fatbin}: a fatbin file loaded instead of the built-in one, for
 * kernel experiments on a GPU machine (variants compiled there with nvcc; see
 * cuda/bench/NOTES-kselect.md). Not for production use.
 *
 * <p>Threading: used only under the owning device's lock.
 */
final class KernelModule implements AutoCloseable {
  private final CUmodule module = new CUmodule();
  private final Map<String, CUfunction> functions = new HashMap<>();
  private final Map<String, Integer> maxBlocksPerSm = new HashMap<>();
  private boolean closed;

  KernelModule() {
    byte[] image = loadImage();
    Driver.check("cuModuleLoadData", JCudaDriver.cuModuleLoadData(module, image));
  }

  static byte[] loadImage() {
    String override = System.getProperty("gv.cuda.fatbin");
    if (override != null) {
      try {
        return Files.readAllBytes(Path.of(override));
      } catch (IOException e) {
        throw new IllegalStateException("cannot read gv.cuda.fatbin " + override, e);
      }
    }
    try (InputStream in = KernelModule.class.getResourceAsStream(GpuAvailability.FATBIN_RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(GpuAvailability.kernelsMissingReason());
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + GpuAvailability.FATBIN_RESOURCE, e);
    }
  }

  CUfunction function(String name) {
    if (closed) {
      throw new IllegalStateException("kernel module closed");
    }
    return functions.computeIfAbsent(name, n -> {
      CUfunction f = new CUfunction();
      Driver.check("cuModuleGetFunction(" + n + ")", JCudaDriver.cuModuleGetFunction(f, module, n));
      if (n.contains("_select_")) {
        // the selection kernels stage their loads in shared memory (cp.async) and read each input
        // value once: shared memory, not L1, is what bounds their residency (a hint to the driver)
        Driver.check("cuFuncSetAttribute(" + n + ")", JCudaDriver.cuFuncSetAttribute(f,
            CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100));
      }
      return f;
    });
  }

  /**
   * Blocks of {@code threads} threads of kernel {@code name} that fit on one multiprocessor at once
   * (occupancy API, no dynamic shared memory); remembered, since launchers ask on every call.
   */
  int maxBlocksPerSm(String name, int threads) {
    return maxBlocksPerSm.computeIfAbsent(name + "/" + threads, key -> {
      int[] blocks = new int[1];
      Driver.check("cuOccupancyMaxActiveBlocksPerMultiprocessor(" + name + ")",
          JCudaDriver.cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, function(name), threads, 0));
      return blocks[0];
    });
  }

  /** Launches kernel {@code name} with one by-value argument per element of {@code args}. */
  void launch(String name, int gridX, int gridY, int block, int sharedBytes, CUstream stream, Pointer... args) {
    CUfunction f = function(name);
    Driver.check("cuLaunchKernel(" + name + ")",
        JCudaDriver.cuLaunchKernel(f, gridX, gridY, 1, block, 1, 1, sharedBytes, stream, Pointer.to(args), null));
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      functions.clear();
      maxBlocksPerSm.clear();
      Driver.check("cuModuleUnload", JCudaDriver.cuModuleUnload(module));
    }
  }
}
