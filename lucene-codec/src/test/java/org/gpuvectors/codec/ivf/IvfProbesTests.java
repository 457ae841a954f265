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
    assertEquals(16, IvfProbes.probes(16, 256, 10, 1000, 1000));
    assertEquals(16, IvfProbes.probes(16, 256, 100, 1000, 1000));
    assertEquals(32, IvfProbes.probes(16, 256, 200, 1000, 1000));
    assertEquals(256, IvfProbes.probes(16, 256, 10_000, 1000, 1000), "at most nlist");
  }

  @Test
  void filtersScaleTheListsByTheirSelectivity() {
    assertEquals(32, IvfProbes.probes(16, 256, 10, 500, 1000), "half accepted: twice the lists");
    assertEquals(160, IvfProbes.probes(16, 256, 10, 100, 1000));
    assertEquals(256, IvfProbes.probes(16, 256, 10, 10, 1000), "selective: every list, exact search");
    assertEquals(256, IvfProbes.probes(16, 256, 10, 0, 1000));
  }
}
