package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@link FlatConfig}: the production defaults, one field changed at a time, and what it refuses. */
class FlatConfigTest {

  @Test
  void defaults() {
    FlatConfig c = FlatConfig.defaults();
    assertTrue(c.halfCopy());
    assertEquals(8, c.scanMaxQueries());
    assertEquals(16, c.halfMaxQueries());
    assertEquals(256L << 20, c.tileBudgetBytes());
    assertSame(c, GpuConfig.defaults().flat());
  }

  @Test
  void withChangesOneField() {
    FlatConfig d = FlatConfig.defaults();
    assertEquals(new FlatConfig(false, 8, 16, 256L << 20), d.withHalfCopy(false));
    assertEquals(new FlatConfig(true, 0, 16, 256L << 20), d.withScanMaxQueries(0));
    assertEquals(new FlatConfig(true, 8, 0, 256L << 20), d.withHalfMaxQueries(0));
    assertEquals(new FlatConfig(true, 8, 16, 1), d.withTileBudgetBytes(1));
    assertFalse(GpuConfig.builder().flat(d.withHalfCopy(false)).build().flat().halfCopy());
  }

  @Test
  void refusesNegativeBoundsAndAnEmptyTile() {
    FlatConfig d = FlatConfig.defaults();
    assertTrue(assertThrows(IllegalArgumentException.class, () -> d.withScanMaxQueries(-1)).getMessage()
        .contains("scan max queries"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> d.withHalfMaxQueries(-1)).getMessage()
        .contains("half max queries"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> d.withTileBudgetBytes(0)).getMessage()
        .contains("tile budget bytes"));
  }
}
