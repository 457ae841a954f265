package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DeviceBytesTest {

  @Test
  void partsAddUpAndSumPartByPart() {
    DeviceBytes flat = DeviceBytes.builder()
        .add(MemoryPart.VECTORS, 3072)
        .add(MemoryPart.COMPACT_VECTORS, 1536)
        .add(MemoryPart.NORMS, 4)
        .build();
    DeviceBytes graph = DeviceBytes.builder().add(flat).add(MemoryPart.GRAPH, 128).add(MemoryPart.GRAPH, 4).build();
    assertEquals(4612, flat.total());
    assertEquals(4744, graph.total());
    assertEquals(132, graph.get(MemoryPart.GRAPH));
    DeviceBytes sum = flat.plus(graph);
    assertEquals(6144, sum.get(MemoryPart.VECTORS));
    assertEquals(flat.total() + graph.total(), sum.total());
    assertEquals(0, sum.get(MemoryPart.PQ_CODES));
    assertEquals(flat, DeviceBytes.NONE.plus(flat));
    assertEquals("DeviceBytes{vectors=3072, compact_vectors=1536, norms=4}", flat.toString());
  }

  @Test
  void theMapHasEveryPartInOrderZerosIncluded() {
    Map<MemoryPart, Long> map = DeviceBytes.builder().add(MemoryPart.PQ_CODES, 16).build().asMap();
    assertEquals(List.of(MemoryPart.values()), List.copyOf(map.keySet()));
    assertEquals(16L, map.get(MemoryPart.PQ_CODES));
    assertEquals(0L, map.get(MemoryPart.VECTORS));
    assertEquals(List.of("vectors", "compact_vectors", "norms", "centroids", "lists", "pq_codes", "pq_codebooks",
        "graph"), List.of(MemoryPart.values()).stream().map(MemoryPart::key).toList());
  }

  @Test
  void negativeBytesAreRefused() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> DeviceBytes.builder().add(MemoryPart.NORMS, -1));
    assertEquals("norms: negative bytes -1", e.getMessage());
  }
}
