package org.gpuvectors.codec.ivf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class IvfProbesTests {

  @Test
  void defaults() {
    assertEquals(16, IvfProbes.defaultProbes(OptionalInt.empty(), 256));
    assertEquals(1, IvfProbes.defaultProbes(OptionalInt.empty(), 3));
    assertEquals(10, IvfProbes.defaultProbes(OptionalInt.of(10), 256));
    assertEquals(8, IvfProbes.defaultProbes(OptionalInt.of(100), 8), "at most nlist");
    assertEquals(245, IvfBuilder.nlist(OptionalInt.empty(), 60_000));
    assertEquals(1, IvfBuilder.nlist(OptionalInt.empty(), 1));
    assertEquals(50, IvfBuilder.nlist(OptionalInt.of(4096), 50), "at most one list per vector");
  }

  @Test
  void numCandidatesAboveTheBaseScaleTheLists() {
    int size = 1_000_000; // large enough for nlist / 16 lists to scan more than the floor below
    assertEquals(16, IvfProbes.probes(16, 256, 10, size, size));
    assertEquals(16, IvfProbes.probes(16, 256, 100, size, size));
    assertEquals(32, IvfProbes.probes(16, 256, 200, size, size));
    assertEquals(256, IvfProbes.probes(16, 256, 10_000, size, size), "at most nlist");
  }

  @Test
  void aSmallSegmentScansAtLeast64VectorsAResult() {
    // 20,000 vectors in 141 lists: 9 lists hold about 1,280 vectors, fewer than 64 x 100
    assertEquals(46, IvfProbes.probes(9, 141, 100, 20_000, 20_000), "ceil(6,400 / (20,000 / 141))");
    assertEquals(9, IvfProbes.probes(9, 141, 10, 20_000, 20_000), "640 vectors: the default lists scan more");
    assertEquals(141, IvfProbes.probes(9, 141, 1000, 20_000, 20_000), "64,000 vectors: every list");
  }

  @Test
  void filtersScaleTheListsByTheirSelectivity() {
    int size = 1_000_000;
    assertEquals(32, IvfProbes.probes(16, 256, 10, size / 2, size), "half accepted: twice the lists");
    assertEquals(160, IvfProbes.probes(16, 256, 10, size / 10, size));
    assertEquals(256, IvfProbes.probes(16, 256, 10, size / 100, size), "selective: every list, exact search");
    assertEquals(256, IvfProbes.probes(16, 256, 10, 0, size));
  }
}
