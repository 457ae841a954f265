package org.gpuvectors.codec;

import java.util.Arrays;
import java.util.Random;
import java.util.random.RandomGenerator;
import org.gpuvectors.codec.index.VectorRows;

/**
 * Embedding-like synthetic vectors, the data set of {@code bench/es/bench_es.py --dataset embedding} at test scale
 * (same construction, Java's generator, so not the same numbers): unit length, compared by cosine; a strong common
 * mean direction (random pairs at cosine about 0.2); the rest in a latent space of {@code min(64, dims - 1)}
 * dimensions whose variances fall as a power law (i^-0.6), holding overlapping clusters (spread 1.1 x the centres')
 * of Zipf sizes (exponent 0.9); plus isotropic noise in every dimension. Unlike well-separated clustered gaussians,
 * IVF's lists and a graph's neighbourhoods overlap here, as they do for real text embeddings: what the defaults
 * must hold on.
 *
 * <p>The orthonormal basis is made by Gram-Schmidt here (a handful of lines): the tests have no linear-algebra
 * library, and no other operation of one is needed.
 */
final class EmbeddingLikeData {
  private static final double SPREAD = 1.1;
  private static final double NOISE_SHARE = 0.6;
  private static final double ZIPF = 0.9;
  private static final double POWER = 0.6;

  private final int dims;
  private final Random random;
  private final double[] mean; // the common direction, scaled
  private final double[][] basis; // latent -> dims
  private final double[] sd; // latent variances' square roots
  private final double[][] centres;
  private final double[] cumulative; // Zipf cluster sizes
  private final double noise;

  /** Data of about {@code n} vectors ({@code n / 1000} clusters, at least 10) of {@code dims} dimensions. */
  EmbeddingLikeData(int n, int dims, long seed) {
    this.dims = dims;
    this.random = new Random(seed);
    int r = Math.min(64, dims - 1);
    int clusters = Math.max(10, n / 1000);
    double[][] q = orthonormal(r + 1, dims);
    double a = Math.sqrt(0.25 * (1 + SPREAD * SPREAD + NOISE_SHARE)); // |mean|^2 a quarter of the rest
    mean = new double[dims];
    for (int d = 0; d < dims; d++) {
      mean[d] = a * q[0][d];
    }
    basis = new double[r][];
    System.arraycopy(q, 1, basis, 0, r);
    sd = new double[r];
    double total = 0;
    for (int i = 0; i < r; i++) {
      sd[i] = Math.pow(i + 1, -POWER);
      total += sd[i];
    }
    for (int i = 0; i < r; i++) {
      sd[i] = Math.sqrt(sd[i] / total);
    }
    centres = new double[clusters][r];
    for (double[] c : centres) {
      for (int i = 0; i < r; i++) {
        c[i] = random.nextGaussian() * sd[i];
      }
    }
    cumulative = new double[clusters];
    double sum = 0;
    for (int c = 0; c < clusters; c++) {
      sum += Math.pow(c + 1, -ZIPF);
      cumulative[c] = sum;
    }
    for (int c = 0; c < clusters; c++) {
      cumulative[c] /= sum;
    }
    noise = Math.sqrt(NOISE_SHARE / dims);
  }

  /** The next vector (unit length). */
  float[] next() {
    return next(random);
  }

  /**
   * A vector of this data set drawn with {@code draws} (unit length): threads that each hold a generator of their own
   * draw from the same clusters and directions in parallel.
   */
  float[] next(RandomGenerator draws) {
    // the first cluster whose cumulative share reaches u (the last for rounding above it)
    int at = Arrays.binarySearch(cumulative, draws.nextDouble());
    int c = Math.min(cumulative.length - 1, at >= 0 ? at : -at - 1);
    double[] x = mean.clone();
    for (int i = 0; i < basis.length; i++) {
      double y = centres[c][i] + SPREAD * draws.nextGaussian() * sd[i];
      for (int d = 0; d < dims; d++) {
        x[d] += y * basis[i][d];
      }
    }
    float[] v = new float[dims];
    for (int d = 0; d < dims; d++) {
      v[d] = (float) (x[d] + draws.nextGaussian() * noise);
    }
    VectorRows.normalize(v);
    return v;
  }

  /** {@code count} rows of {@code dims} orthonormal vectors (Gram-Schmidt of Gaussian rows). */
  private double[][] orthonormal(int count, int dims) {
    double[][] rows = new double[count][dims];
    for (int i = 0; i < count; i++) {
      double[] v = rows[i];
      for (int d = 0; d < dims; d++) {
        v[d] = random.nextGaussian();
      }
      for (int j = 0; j < i; j++) {
        double dot = 0;
        for (int d = 0; d < dims; d++) {
          dot += v[d] * rows[j][d];
        }
        for (int d = 0; d < dims; d++) {
          v[d] -= dot * rows[j][d];
        }
      }
      double norm = 0;
      for (double x : v) {
        norm += x * x;
      }
      norm = Math.sqrt(norm);
      for (int d = 0; d < dims; d++) {
        v[d] /= norm;
      }
    }
    return rows;
  }
}
