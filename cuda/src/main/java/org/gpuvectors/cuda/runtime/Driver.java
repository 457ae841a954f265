package org.gpuvectors.cuda.runtime;

import java.lang.reflect.Field;
import jcuda.NativePointerObject;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

/**
 * Package-private helpers around the JCuda driver API. Every driver call is checked through {@link
 * #check}, which throws a {@link CudaException} naming the call and the error (JCuda's own
 * exceptions would name only the error, so they stay off and no return code is ignored).
 */
public final class Driver {
  private static final Field NATIVE_POINTER;

  static {
    try {
      NATIVE_POINTER = NativePointerObject.class.getDeclaredField("nativePointer");
      NATIVE_POINTER.setAccessible(true);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private Driver() {}

  public static void check(String call, int result) {
    if (result != CUresult.CUDA_SUCCESS) {
      throw CudaException.driver(call, result, CUresult.stringFor(result));
    }
  }

  /** The raw address a JCuda handle or device pointer wraps (for FFM calls and kernel structs). */
  public static long address(NativePointerObject p) {
    try {
      return p == null ? 0L : NATIVE_POINTER.getLong(p);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A JCuda device pointer for a raw device address. */
  public static CUdeviceptr deviceptr(long address) {
    CUdeviceptr p = new CUdeviceptr();
    try {
      NATIVE_POINTER.setLong(p, address);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
    return p;
  }

  /** A device attribute ({@code cuDeviceGetAttribute}). */
  public static int attribute(jcuda.driver.CUdevice dev, int attribute) {
    int[] v = new int[1];
    check("cuDeviceGetAttribute", JCudaDriver.cuDeviceGetAttribute(v, attribute, dev));
    return v[0];
  }

  /** cuInit once per JVM. Throws LinkageError when the JCuda natives cannot load. */
  public static synchronized void init() {
    if (!initialized) {
      JCudaDriver.setExceptionsEnabled(false);
      check("cuInit", JCudaDriver.cuInit(0));
      initialized = true;
    }
  }

  private static boolean initialized;
}
