package org.gpuvectors.codec.gpu;

import org.gpuvectors.codec.index.Metric;

/** The GPU module's metric for the codec's: where the codec hands vectors or queries to the device. */
public final class DeviceMetric {
  private DeviceMetric() {}

  public static org.gpuvectors.cuda.Metric of(Metric metric) {
    return switch (metric) {
      case L2 -> org.gpuvectors.cuda.Metric.L2;
      case INNER_PRODUCT -> org.gpuvectors.cuda.Metric.INNER_PRODUCT;
      case COSINE -> org.gpuvectors.cuda.Metric.COSINE;
    };
  }
}
