package org.gpuvectors.cuda.runtime;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Where the compiled kernels are: one fatbin per compile unit ({@code src/main/cuda/<unit>.cu}) in the
 * classpath folder {@code org/gpuvectors/cuda/kernels/}, listed one file name a line by its {@code index}
 * resource; without nvcc at build time, {@code kernels/index.missing} holds the reason instead
 * (build-tools/build-fatbin.sh writes them).
 *
 * <p>{@code GpuConfig.kernelFile}: a single fatbin file used instead of the units, for kernel experiments on a GPU
 * machine (variants compiled there with nvcc, all .cu files in one translation unit; see cuda/bench/NOTES-kselect.md).
 * Not for production use.
 */
public final class KernelImages {
  /**
   * The unit fatbins' classpath folder, absolute: the build writes them under the module's root package
   * (build-tools/build-fatbin.sh), not under this class's.
   */
  public static final String FOLDER = "/org/gpuvectors/cuda/kernels/";
  /** The resource listing the unit fatbins, one file name a line. */
  static final String INDEX = FOLDER + "index";
  /** The resource that replaces the index when the kernels were not built: the reason, one line. */
  static final String MISSING = INDEX + ".missing";

  /** One fatbin: its name (for messages) and its bytes (for cuModuleLoadData). */
  record Image(String name, byte[] bytes) {}

  private KernelImages() {}

  /** The unit fatbins the index lists, in its order; empty when there is no index. */
  public static List<String> units() {
    try (InputStream in = KernelImages.class.getResourceAsStream(INDEX)) {
      if (in == null) {
        return List.of();
      }
      List<String> units = new ArrayList<>();
      for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
        if (!line.isBlank()) {
          units.add(line.strip());
        }
      }
      return units;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + INDEX, e);
    }
  }

  /**
   * Null when the kernels are on the classpath (an index listing at least one unit, every unit present),
   * else why not, starting "GPU kernels were not built".
   */
  public static String missingReason() {
    List<String> units = units();
    if (!units.isEmpty()) {
      for (String unit : units) {
        if (KernelImages.class.getResource(FOLDER + unit) == null) {
          return "GPU kernels were not built (" + INDEX + " lists " + unit + ", not on the classpath)";
        }
      }
      return null;
    }
    try (InputStream in = KernelImages.class.getResourceAsStream(MISSING)) {
      if (in != null) {
        return new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
      }
    } catch (IOException e) {
      // fall through to the generic reason
    }
    return "GPU kernels were not built (no " + INDEX + " resource on the classpath)";
  }

  /**
   * The fatbins to load: {@code kernelFile} alone when not null, else every unit the index lists. Throws
   * IllegalStateException with {@link #missingReason()} when there are none.
   */
  static List<Image> load(Path kernelFile) {
    if (kernelFile != null) {
      try {
        return List.of(new Image(kernelFile.toString(), Files.readAllBytes(kernelFile)));
      } catch (IOException e) {
        throw new IllegalStateException("cannot read the kernel file " + kernelFile, e);
      }
    }
    String missing = missingReason();
    if (missing != null) {
      throw new IllegalStateException(missing);
    }
    List<Image> images = new ArrayList<>();
    for (String unit : units()) {
      try (InputStream in = KernelImages.class.getResourceAsStream(FOLDER + unit)) {
        if (in == null) {
          throw new IllegalStateException(missingReason());
        }
        images.add(new Image(unit, in.readAllBytes()));
      } catch (IOException e) {
        throw new IllegalStateException("cannot read " + FOLDER + unit, e);
      }
    }
    return images;
  }
}
