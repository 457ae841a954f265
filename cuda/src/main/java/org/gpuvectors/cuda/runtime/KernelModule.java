package org.gpuvectors.cuda.runtime;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import jcuda.Pointer;
import jcuda.driver.CUfunction;
import jcuda.driver.CUfunction_attribute;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;

/**
 * The gpu-vectors kernels loaded once into a device's context: one CUmodule per compile unit's fatbin
 * ({@link KernelImages}: cuModuleLoadData from the classpath resource bytes, or the single
 * {@code GpuConfig.kernelFile} file), all loaded when the device opens (a GPU the fatbins have no code for
 * fails there, not at its first search) and all unloaded by {@link #close()}. Kernels are found by stable
 * extern "C" name in whichever module exports them (build-fatbin.sh fails the build when two units
 * export one name).
 *
 * <p>Threading: used only under the owning device's lock.
 */
public final class KernelModule implements AutoCloseable {
  private record Unit(String name, CUmodule module) {}

  private final List<Unit> units = new ArrayList<>();
  private final Map<String, CUfunction> functions = new HashMap<>();
  private final Map<String, Integer> maxBlocksPerSm = new HashMap<>();
  private final Map<String, Integer> maxDynamicShared = new HashMap<>();
  /** Per kernel, the dynamic shared memory its launches were allowed past the default 48 KB. */
  private final Map<String, Integer> dynamicSharedAllowed = new HashMap<>();
  private final Map<String, Integer> staticShared = new HashMap<>();
  private boolean closed;

  public KernelModule(java.nio.file.Path kernelFile) {
    try {
      for (KernelImages.Image image : KernelImages.load(kernelFile)) {
        CUmodule module = new CUmodule();
        Driver.check("cuModuleLoadData(" + image.name() + ")", JCudaDriver.cuModuleLoadData(module, image.bytes()));
        units.add(new Unit(image.name(), module));
      }
    } catch (RuntimeException e) {
      try {
        close();  // the modules loaded before the failure
      } catch (RuntimeException unload) {
        e.addSuppressed(unload);
      }
      throw e;
    }
  }

  /** The loaded fatbins' names, in load order (the index's units, or the GpuConfig.kernelFile file). */
  public List<String> unitNames() {
    return units.stream().map(Unit::name).toList();
  }

  public CUfunction function(String name) {
    if (closed) {
      throw new IllegalStateException("kernel module closed");
    }
    return functions.computeIfAbsent(name, n -> {
      CUfunction f = find(n);
      if (n.contains("_select_")) {
        // the selection kernels stage their loads in shared memory (cp.async) and read each input
        // value once: shared memory, not L1, is what bounds their residency (a hint to the driver)
        Driver.check("cuFuncSetAttribute(" + n + ")", JCudaDriver.cuFuncSetAttribute(f,
            CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100));
      }
      return f;
    });
  }

  /** Kernel {@code name} from the first module that exports it (one does: build-fatbin.sh checks). */
  private CUfunction find(String name) {
    CUfunction f = new CUfunction();
    for (Unit unit : units) {
      int result = JCudaDriver.cuModuleGetFunction(f, unit.module(), name);
      if (result != CUresult.CUDA_ERROR_NOT_FOUND) {
        Driver.check("cuModuleGetFunction(" + name + ") in " + unit.name(), result);
        return f;
      }
    }
    throw CudaException.driver("cuModuleGetFunction(" + name + ") in " + unitNames(),
        CUresult.CUDA_ERROR_NOT_FOUND, CUresult.stringFor(CUresult.CUDA_ERROR_NOT_FOUND));
  }

  /**
   * Blocks of {@code threads} threads of kernel {@code name} that fit on one multiprocessor at once
   * (occupancy API, no dynamic shared memory); remembered, since launchers ask on every call.
   */
  public int maxBlocksPerSm(String name, int threads) {
    return maxBlocksPerSm.computeIfAbsent(name + "/" + threads, key -> {
      int[] blocks = new int[1];
      Driver.check("cuOccupancyMaxActiveBlocksPerMultiprocessor(" + name + ")",
          JCudaDriver.cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, function(name), threads, 0));
      return blocks[0];
    });
  }

  /**
   * The most dynamic shared memory a block of kernel {@code name} may use on this context's device: the
   * device's opt-in maximum per block (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN; 227 KB at compute
   * capability 9.0, 163 KB at 8.0, 99 KB at 8.6 / 8.9) less the kernel's static shared memory. Remembered.
   */
  public int maxDynamicSharedBytes(String name) {
    return maxDynamicShared.computeIfAbsent(name, n -> {
      jcuda.driver.CUdevice dev = new jcuda.driver.CUdevice();
      Driver.check("cuCtxGetDevice", JCudaDriver.cuCtxGetDevice(dev));
      int optIn = Driver.attribute(dev,
          jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
      return Math.max(0, optIn - staticSharedBytes(n));
    });
  }

  /** The static shared memory of a block of kernel {@code name}; remembered. */
  private int staticSharedBytes(String name) {
    return staticShared.computeIfAbsent(name, n -> {
      int[] statics = new int[1];
      Driver.check("cuFuncGetAttribute(" + n + ")", JCudaDriver.cuFuncGetAttribute(statics,
          CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function(n)));
      return statics[0];
    });
  }

  /**
   * Lets launches of kernel {@code name} take {@code bytes} of dynamic shared memory (at most {@link
   * #maxDynamicSharedBytes}): past the default 48 KB a kernel must opt in
   * (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). Raises the kernel's allowance only when needed.
   */
  public void allowDynamicShared(String name, int bytes) {
    // without the opt-in a block has 48 KB in all: its static shared memory and the dynamic
    if (bytes + staticSharedBytes(name) <= 48 << 10 || bytes <= dynamicSharedAllowed.getOrDefault(name, 0)) {
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
  public void launch(String name, int gridX, int gridY, int block, int sharedBytes, CUstream stream, Pointer... args) {
    launch3d(name, gridX, gridY, 1, block, sharedBytes, stream, args);
  }

  /** As {@link #launch} on a grid of three dimensions. */
  public void launch3d(String name, int gridX, int gridY, int gridZ, int block, int sharedBytes, CUstream stream,
                Pointer... args) {
    CUfunction f = function(name);
    Driver.check("cuLaunchKernel(" + name + ")",
        JCudaDriver.cuLaunchKernel(f, gridX, gridY, gridZ, block, 1, 1, sharedBytes, stream, Pointer.to(args), null));
  }

  /**
   * As {@link #launch} (a grid of one dimension), as a cooperative launch: every block of the grid is resident at
   * once (the driver refuses a grid larger than the device holds: {@link #maxBlocksPerSm}), so that blocks may wait
   * for one another within the launch.
   */
  public void launchCooperative(String name, int gridX, int block, CUstream stream, Pointer... args) {
    CUfunction f = function(name);
    Driver.check("cuLaunchCooperativeKernel(" + name + ")",
        JCudaDriver.cuLaunchCooperativeKernel(f, gridX, 1, 1, block, 1, 1, 0, stream, Pointer.to(args)));
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      functions.clear();
      maxBlocksPerSm.clear();
      maxDynamicShared.clear();
      dynamicSharedAllowed.clear();
      staticShared.clear();
      // unload every module before reporting the first failure, so that one failure leaks no other module
      int first = CUresult.CUDA_SUCCESS;
      String failed = null;
      for (Unit unit : units) {
        int result = JCudaDriver.cuModuleUnload(unit.module());
        if (result != CUresult.CUDA_SUCCESS && failed == null) {
          first = result;
          failed = unit.name();
        }
      }
      units.clear();
      Driver.check("cuModuleUnload(" + failed + ")", first);
    }
  }
}
