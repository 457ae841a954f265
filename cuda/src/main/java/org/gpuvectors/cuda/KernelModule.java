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
  private final Map<String, Integer> maxDynamicShared = new HashMap<>();
  /** Per kernel, the dynamic shared memory its launches were allowed past the default 48 KB. */
  private final Map<String, Integer> dynamicSharedAllowed = new HashMap<>();
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

  /**
   * The most dynamic shared memory a block of kernel {@code name} may use on this context's device: the
   * device's opt-in maximum per block (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN; 227 KB on an
   * H100, 163 KB on an A100, 99 KB on sm_86 / sm_89) less the kernel's static shared memory. Remembered.
   */
  int maxDynamicSharedBytes(String name) {
    return maxDynamicShared.computeIfAbsent(name, n -> {
      jcuda.driver.CUdevice dev = new jcuda.driver.CUdevice();
      Driver.check("cuCtxGetDevice", JCudaDriver.cuCtxGetDevice(dev));
      int optIn = GpuAvailability.attribute(dev,
          jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
      int[] statics = new int[1];
      Driver.check("cuFuncGetAttribute(" + n + ")", JCudaDriver.cuFuncGetAttribute(statics,
          CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function(n)));
      return Math.max(0, optIn - statics[0]);
    });
  }

  /**
   * Lets launches of kernel {@code name} take {@code bytes} of dynamic shared memory (at most {@link
   * #maxDynamicSharedBytes}): past the default 48 KB a kernel must opt in
   * (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). Raises the kernel's allowance only when needed.
   */
  void allowDynamicShared(String name, int bytes) {
    if (bytes <= 48 << 10 || bytes <= dynamicSharedAllowed.getOrDefault(name, 0)) {
      return;
    }
    if (bytes > maxDynamicSharedBytes(name)) {
      throw new IllegalArgumentException(name + ": " + bytes + " bytes of dynamic shared memory, at most "
          + maxDynamicSharedBytes(name) + " on this device");
    }
    Driver.check("cuFuncSetAttribute(" + name + ")", JCudaDriver.cuFuncSetAttribute(function(name),
        CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes));
    dynamicSharedAllowed.put(name, bytes);
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
      maxDynamicShared.clear();
      dynamicSharedAllowed.clear();
      Driver.check("cuModuleUnload", JCudaDriver.cuModuleUnload(module));
    }
  }
}
