package org.gpuvectors.cuda.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The build's kernel output on the test classpath (target/classes) against the sources: with nvcc at build
 * time, kernels/index lists exactly one fatbin per src/main/cuda/*.cu and each is a fatbin; without, the
 * missing marker gives the reason and no unit fatbin is there. And the GpuConfig.kernelFile override.
 */
class KernelImagesTest {
  /** A fatbin's first four bytes: its magic 0xBA55ED50, little-endian. */
  private static final byte[] FATBIN_MAGIC = {0x50, (byte) 0xED, 0x55, (byte) 0xBA};

  private static TreeSet<String> sourceUnits() throws IOException {
    try (Stream<Path> files = Files.list(Path.of("src/main/cuda"))) {
      TreeSet<String> units = new TreeSet<>();
      files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".cu"))
          .forEach(n -> units.add(n.substring(0, n.length() - 3)));
      assertTrue(units.size() > 1, "the .cu files of src/main/cuda: " + units);
      return units;
    }
  }

  private static byte[] resource(String name) throws IOException {
    try (InputStream in = KernelImages.class.getResourceAsStream(name)) {
      return in == null ? null : in.readAllBytes();
    }
  }

  @Test
  void buildOutputMatchesTheSources() throws IOException {
    TreeSet<String> units = sourceUnits();
    assertNull(KernelImages.class.getResource("/org/gpuvectors/cuda/gpu-vectors.fatbin"), "the single fatbin of builds before the split");
    List<String> listed = KernelImages.units();
    if (listed.isEmpty()) {
      byte[] marker = resource(KernelImages.MISSING);
      assertNotNull(marker, "neither " + KernelImages.INDEX + " nor " + KernelImages.MISSING);
      String reason = new String(marker, StandardCharsets.UTF_8).trim();
      assertTrue(reason.startsWith("GPU kernels were not built"), reason);
      assertEquals(reason, KernelImages.missingReason());
      for (String unit : units) {
        assertNull(KernelImages.class.getResource(KernelImages.FOLDER + unit + ".fatbin"), unit + ".fatbin without index");
      }
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> KernelImages.load(null));
      assertEquals(reason, e.getMessage());
      return;
    }
    assertEquals(units.stream().map(u -> u + ".fatbin").toList(), listed, "one fatbin per .cu, in name order");
    assertNull(resource(KernelImages.MISSING), "a missing marker next to built kernels");
    assertNull(KernelImages.missingReason());
    List<KernelImages.Image> images = KernelImages.load(null);
    assertEquals(listed, images.stream().map(KernelImages.Image::name).toList());
    for (KernelImages.Image image : images) {
      byte[] bytes = image.bytes();
      assertTrue(bytes.length > 1024, image.name() + ": " + bytes.length + " bytes");
      assertArrayEquals(FATBIN_MAGIC, Arrays.copyOf(bytes, 4), image.name() + " starts with the fatbin magic");
      assertArrayEquals(resource(KernelImages.FOLDER + image.name()), bytes, image.name());
    }
  }

  @Test
  void overrideLoadsJustThatFile(@TempDir Path dir) throws IOException {
    Path fatbin = dir.resolve("variant.fatbin");
    byte[] bytes = {0x50, (byte) 0xED, 0x55, (byte) 0xBA, 1, 2, 3};
    Files.write(fatbin, bytes);
    List<KernelImages.Image> images = KernelImages.load(fatbin);
    assertEquals(1, images.size());
    assertEquals(fatbin.toString(), images.get(0).name());
    assertArrayEquals(bytes, images.get(0).bytes());

    Path absent = dir.resolve("absent.fatbin");
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> KernelImages.load(absent));
    assertTrue(e.getMessage().contains("kernel file " + absent), e.getMessage());
  }
}
