package org.gpuvectors.codec.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.gpuvectors.codec.graph.GraphFilterPlan;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.ivf.IvfPqField;
import org.gpuvectors.cuda.graph.GpuGraphIndex;
import org.gpuvectors.cuda.ivf.GpuIvfPqIndex;
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

  @Test
  void theHostReRanksAsManyCandidatesAsTheDevice() {
    for (int factor : new int[] {1, 2, 4, 8, 16, 64, 256}) {
      for (int k : new int[] {1, 10, 100, 1000, 2048}) {
        assertEquals(GpuIvfPqIndex.candidates(factor, k), IvfPqField.rerankCandidates(factor, k),
            "factor " + factor + ", k " + k);
      }
    }
  }
}
