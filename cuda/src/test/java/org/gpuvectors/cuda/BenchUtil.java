package org.gpuvectors.cuda;

import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.IntStream;

/** Shared helpers of the benchmark programs (not tests). */
public final class BenchUtil {
  private BenchUtil() {}

  public static double median(double[] x) {
    double[] s = x.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  /** Fast parallel pseudo-random floats in [-1, 1) (splitmix64 per element). */
  public static float[] randomFloats(long count, long seed) {
    float[] x = new float[Math.toIntExact(count)];
    IntStream.range(0, 64).parallel().forEach(part -> {
      int from = (int) (count * part / 64), to = (int) (count * (part + 1) / 64);
      long z = seed * 0x9E3779B97F4A7C15L + part;
      for (int i = from; i < to; i++) {
        z += 0x9E3779B97F4A7C15L;
        long r = z;
        r = (r ^ (r >>> 30)) * 0xBF58476D1CE4E5B9L;
        r = (r ^ (r >>> 27)) * 0x94D049BB133111EBL;
        r ^= r >>> 31;
        x[i] = ((r >>> 40) * 0x1.0p-24f) * 2f - 1f;
      }
    });
    return x;
  }

  /** Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written. */
  public static double copyBandwidth(GpuDevice d, long bytes) {
    try (GpuDevice.Scope s = d.lock(); DeviceBuffer a = d.allocate(bytes); DeviceBuffer b = d.allocate(bytes)) {
      double[] t = new double[10];
      d.copy(a, b, bytes);
      d.synchronize();
      for (int i = 0; i < t.length; i++) {
        t[i] = d.time(() -> d.copy(a, b, bytes));
      }
      return 2.0 * bytes / (median(t) * 1e-3) / 1e9;
    }
  }

  public static PrintWriter csv(String name, String header) throws IOException {
    String out = System.getenv().getOrDefault("OUT", "/tmp");
    PrintWriter w = new PrintWriter(Files.newBufferedWriter(Path.of(out, name)));
    w.println(header);
    return w;
  }

  /**
   * Device 0 for a benchmark program, loading the fatbin that {@code -Dgv.cuda.fatbin=FILE} names instead of the
   * jar's kernels when given (kernel variants compiled on the GPU machine: bench/kselect-variants.sh).
   */
  public static GpuDevice openDevice() {
    String file = System.getProperty("gv.cuda.fatbin");
    return GpuDevice.open(0, GpuConfig.builder().kernelFile(file == null ? null : Path.of(file)).build());
  }
}
