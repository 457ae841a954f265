package org.gpuvectors.codec.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.gpuvectors.codec.graph.GraphFilterPlan;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.cuda.GpuGraphIndex;
import org.junit.jupiter.api.Test;

/** Where the codec's search policy meets what the GPU module executes: both must agree. */
class DeviceBoundaryTests {

  @Test
  void everyMetricMapsToTheKernelsOfTheSameName() {
    for (Metric metric : Metric.values()) {
      org.gpuvectors.cuda.Metric device = DeviceMetric.of(metric);
      assertEquals(metric.name(), device.name());
      assertEquals(metric.largestFirst(), device.largestFirst());
    }
  }

  @Test
  void theFilterRuleWalksNoWiderThanTheKernel() {
    // the CPU walks the same width as the GPU only while the rule's cap is the kernel's widest beam
    assertEquals(GpuGraphIndex.MAX_WIDTH, GraphFilterPlan.MAX_WIDTH);
  }
}
