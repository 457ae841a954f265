package org.gpuvectors.codec.gpu;

/**
 * How much of the device's memory resident segment fields may take: a fraction of the device's memory, or a number
 * of bytes (capped at the device's memory). Operators size the budget either way, as Elasticsearch's disk watermarks
 * do: a fraction carries over between GPUs of different sizes, bytes make a test or a benchmark exact.
 *
 * @param fraction of the device's memory, in (0, 1]; unused when {@code bytes} is set
 * @param bytes the budget in bytes, or 0 for a fraction
 */
public record MemoryBudget(double fraction, long bytes) {

  public MemoryBudget {
    if (bytes < 0) {
      throw new IllegalArgumentException("GPU memory budget must be > 0 bytes but was [" + bytes + "]");
    }
    if (bytes == 0 && (fraction <= 0 || fraction > 1 || Double.isNaN(fraction))) {
      throw new IllegalArgumentException("GPU memory budget must be in (0, 1] but was [" + fraction + "]");
    }
  }

  /** A fraction of the device's memory, in (0, 1]. */
  public static MemoryBudget ofFraction(double fraction) {
    return new MemoryBudget(fraction, 0);
  }

  /** A number of bytes (more than the device has means all of it). */
  public static MemoryBudget ofBytes(long bytes) {
    if (bytes <= 0) {
      throw new IllegalArgumentException("GPU memory budget must be > 0 bytes but was [" + bytes + "]");
    }
    return new MemoryBudget(0, bytes);
  }

  /** The budget in bytes on a device with {@code deviceBytes} of memory. */
  public long bytesOf(long deviceBytes) {
    return bytes > 0 ? Math.min(bytes, deviceBytes) : (long) (deviceBytes * fraction);
  }

  @Override
  public String toString() {
    return bytes > 0 ? bytes + " bytes" : fraction * 100 + " % of the device";
  }
}
