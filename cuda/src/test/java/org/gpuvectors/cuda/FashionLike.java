package org.gpuvectors.cuda;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.zip.GZIPInputStream;

/**
 * Test and benchmark data for the TF32 candidate path (not tests).
 * <ul>
 *   <li>{@link #vectors}: Fashion-MNIST-like images, 784 integer pixels in 0..255: 10 classes, each a prototype
 *       (60% of the pixels lit) plus 8 class-specific directions with Gaussian weights (so neighbours have a low
 *       intrinsic dimension, as real images do) plus pixel noise, rounded and clamped. The TF32 bound is then 2-6%
 *       of the k-th distance at k = 1..100, about as on the real set (5-10%).
 *   <li>{@link #clustered}: Gaussian clusters (centres in [-1, 1]^dims, sigma 0.15), as the codec's benchmarks.
 *   <li>{@link #readIdx}: the real Fashion-MNIST images from an idx file (gzip), as Debian's dataset-fashion-mnist
 *       ships them.
 * </ul>
 * The class model (prototypes, directions, centres) is fixed; {@code seed} draws the samples, so vectors and
 * queries of different seeds come from the same classes.
 */
public final class FashionLike {
  public static final int DIMS = 784;
  private static final int CLASSES = 10;
  private static final int DIRECTIONS = 8;
  private static final float[][] PROTOTYPES = new float[CLASSES][DIMS];
  private static final float[][][] BASES = new float[CLASSES][DIRECTIONS][DIMS];

  static {
    SplittableRandom r = new SplittableRandom(1);
    for (int c = 0; c < CLASSES; c++) {
      for (int i = 0; i < DIMS; i++) {
        PROTOTYPES[c][i] = r.nextDouble() < 0.6 ? (float) r.nextDouble(255) : 0f;
        for (int j = 0; j < DIRECTIONS; j++) {
          BASES[c][j][i] = (float) (40 * r.nextGaussian());
        }
      }
    }
  }

  private FashionLike() {}

  /** {@code count} images, row-major, {@link #DIMS} floats each. */
  public static float[] vectors(int count, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    float[] x = new float[count * DIMS];
    double[] a = new double[DIRECTIONS];
    for (int v = 0; v < count; v++) {
      int c = r.nextInt(CLASSES);
      for (int j = 0; j < DIRECTIONS; j++) {
        a[j] = r.nextGaussian();
      }
      for (int i = 0; i < DIMS; i++) {
        double p = PROTOTYPES[c][i] + 10 * r.nextGaussian();
        for (int j = 0; j < DIRECTIONS; j++) {
          p += a[j] * BASES[c][j][i];
        }
        x[v * DIMS + i] = (float) Math.min(255, Math.max(0, Math.rint(p)));
      }
    }
    return x;
  }

  /** {@code count} points of {@code dims} floats around {@code clusters} fixed centres (sigma 0.15). */
  public static float[] clustered(int count, int dims, int clusters, long seed) {
    SplittableRandom model = new SplittableRandom(2);
    float[] centres = new float[clusters * dims];
    for (int i = 0; i < centres.length; i++) {
      centres[i] = (float) (2 * model.nextDouble() - 1);
    }
    SplittableRandom r = new SplittableRandom(seed);
    float[] x = new float[count * dims];
    for (int v = 0; v < count; v++) {
      int c = r.nextInt(clusters);
      for (int i = 0; i < dims; i++) {
        x[v * dims + i] = (float) (centres[c * dims + i] + 0.15 * r.nextGaussian());
      }
    }
    return x;
  }

  /** Up to {@code max} images of an idx3-ubyte file (gzip), pixels as floats 0..255; null when it is absent. */
  public static float[] readIdx(Path gz, int max) throws IOException {
    if (!Files.isRegularFile(gz)) {
      return null;
    }
    try (InputStream in = new GZIPInputStream(Files.newInputStream(gz), 1 << 16);
         DataInputStream data = new DataInputStream(in)) {
      if (data.readInt() != 0x803) {
        throw new IOException(gz + ": not an idx3-ubyte file");
      }
      int count = Math.min(max, data.readInt());
      int pixels = data.readInt() * data.readInt();
      byte[] raw = new byte[count * pixels];
      data.readFully(raw);
      float[] x = new float[raw.length];
      for (int i = 0; i < raw.length; i++) {
        x[i] = raw[i] & 0xff;
      }
      return x;
    }
  }
}
