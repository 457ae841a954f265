package org.gpuvectors.cuda;

import java.io.IOException;
import java.io.InputStream;
import java.util.HashMap;
import java.util.Map;
import jcuda.Pointer;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;

/**
 * The gpu-vectors fatbin loaded once into a device's context (cuModuleLoadData from the classpath
 * resource bytes) and its kernels by stable extern "C" name.
 *
 * <p>Threading: used only under the owning device's lock.
 */
final class KernelModule implements AutoCloseable {
  private final CUmodule module = new CUmodule();
  private final Map<String, CUfunction> functions = new HashMap<>();
  private boolean closed;

  KernelModule() {
    byte[] image = loadImage();
    Driver.check("cuModuleLoadData", JCudaDriver.cuModuleLoadData(module, image));
  }

  static byte[] loadImage() {
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
      return f;
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
      Driver.check("cuModuleUnload", JCudaDriver.cuModuleUnload(module));
    }
  }
}
