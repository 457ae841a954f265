package org.gpuvectors.cuda;

import org.gpuvectors.cuda.runtime.Driver;
import org.gpuvectors.cuda.runtime.KernelImages;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import jcuda.driver.CUdevice;
import jcuda.driver.JCudaDriver;

/**
 * Whether this JVM can run the GPU kernels, and if not, why: "no CUDA driver (libcuda.so.1 not
 * found)", "no CUDA device", "compute capability 7.5 < 8.0", "GPU kernels were not built (nvcc was
 * not found at build time)". Probing never crashes the JVM: libcuda.so.1 is looked up through FFM
 * before any JCuda class loads, and every later failure is caught and reported.
 *
 * <p>Thread-safe: the probe runs once per JVM ({@link #get()}) and the result is immutable.
 */
public final class GpuAvailability {
  /**
   * Oldest compute capability the kernel fatbins carry code for: their lowest SASS target is sm_80 (and
   * their PTX, compute_90, only JIT-compiles for 9.0 and newer), so a 7.5 GPU could open a context but
   * not load our kernels (build-fatbin.sh lists the targets; every unit is built for the same ones).
   */
  public static final int MIN_COMPUTE_CAPABILITY = 80;

  /** One CUDA device as seen by the probe. */
  public record DeviceInfo(int ordinal, String name, int computeCapability, long totalMemoryBytes, int multiprocessors) {}

  private static volatile GpuAvailability instance;

  private final boolean available;
  private final String reason;
  private final List<DeviceInfo> devices;

  private GpuAvailability(boolean available, String reason, List<DeviceInfo> devices) {
    this.available = available;
    this.reason = reason;
    this.devices = List.copyOf(devices);
  }

  /** The probe result for this JVM (probed once). */
  public static GpuAvailability get() {
    GpuAvailability a = instance;
    if (a == null) {
      synchronized (GpuAvailability.class) {
        if (instance == null) {
          instance = probeNeverThrowing();
        }
        a = instance;
      }
    }
    return a;
  }

  /** True when at least one device is usable and the kernels were built. */
  public boolean available() {
    return available;
  }

  /** Why the GPU is not usable, or "available: ..." with the devices when it is. */
  public String reason() {
    return reason;
  }

  /** Usable devices (compute capability at least {@link #MIN_COMPUTE_CAPABILITY}). */
  public List<DeviceInfo> devices() {
    return devices;
  }

  @Override
  public String toString() {
    return "GpuAvailability[" + reason + "]";
  }

  /** Null when the kernels are on the classpath, else the reason they are not ({@link KernelImages}). */
  public static String kernelsMissingReason() {
    return KernelImages.missingReason();
  }

  /**
   * The probe, turning anything unexpected into a reason (a security manager or Elasticsearch's
   * entitlements refusing a native lookup, say): asking whether there is a GPU must never fail.
   */
  private static GpuAvailability probeNeverThrowing() {
    try {
      return probe(kernelsMissingReason());
    } catch (RuntimeException | LinkageError e) {
      return new GpuAvailability(false, "GPU probe failed: " + e, List.of());
    }
  }

  /** Visible for tests: the probe with a given kernels-missing reason (null = kernels present). */
  static GpuAvailability probe(String kernelsMissing) {
    if (!driverLibraryPresent()) {
      return new GpuAvailability(false, "no CUDA driver (libcuda.so.1 not found)", List.of());
    }
    List<DeviceInfo> usable = new ArrayList<>();
    List<String> tooOld = new ArrayList<>();
    try {
      Driver.init();
      int[] count = new int[1];
      Driver.check("cuDeviceGetCount", JCudaDriver.cuDeviceGetCount(count));
      if (count[0] == 0) {
        return new GpuAvailability(false, "no CUDA device", List.of());
      }
      for (int i = 0; i < count[0]; i++) {
        DeviceInfo info = describe(i);
        if (info.computeCapability() < MIN_COMPUTE_CAPABILITY) {
          tooOld.add(String.format("compute capability %d.%d < %d.%d (%s)", info.computeCapability() / 10,
              info.computeCapability() % 10, MIN_COMPUTE_CAPABILITY / 10, MIN_COMPUTE_CAPABILITY % 10, info.name()));
        } else {
          usable.add(info);
        }
      }
    } catch (LinkageError e) {
      return new GpuAvailability(false, "JCuda natives could not be loaded: " + e, List.of());
    } catch (RuntimeException e) {
      return new GpuAvailability(false, "CUDA initialisation failed: " + e.getMessage(), List.of());
    }
    if (usable.isEmpty()) {
      return new GpuAvailability(false, String.join("; ", tooOld), List.of());
    }
    if (kernelsMissing != null) {
      return new GpuAvailability(false, kernelsMissing, usable);
    }
    return new GpuAvailability(true, "available: " + usable, usable);
  }

  static DeviceInfo describe(int ordinal) {
    CUdevice dev = new CUdevice();
    Driver.check("cuDeviceGet", JCudaDriver.cuDeviceGet(dev, ordinal));
    byte[] name = new byte[256];
    Driver.check("cuDeviceGetName", JCudaDriver.cuDeviceGetName(name, name.length, dev));
    int n = 0;
    while (n < name.length && name[n] != 0) {
      n++;
    }
    int major = Driver.attribute(dev, jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    int minor = Driver.attribute(dev, jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    int sms = Driver.attribute(dev, jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    long[] mem = new long[1];
    Driver.check("cuDeviceTotalMem", JCudaDriver.cuDeviceTotalMem(mem, dev));
    return new DeviceInfo(ordinal, new String(name, 0, n, StandardCharsets.UTF_8), major * 10 + minor, mem[0], sms);
  }

  /** Looks libcuda.so.1 up with the system loader (FFM) without loading any JCuda native. */
  public static boolean driverLibraryPresent() {
    try (Arena arena = Arena.ofConfined()) {
      SymbolLookup.libraryLookup("libcuda.so.1", arena);
      return true;
    } catch (IllegalArgumentException | UnsatisfiedLinkError e) {
      return false;
    }
  }
}
