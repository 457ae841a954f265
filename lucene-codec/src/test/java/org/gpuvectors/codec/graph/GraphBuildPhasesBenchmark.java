package org.gpuvectors.codec.graph;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Random;
import java.util.zip.GZIPInputStream;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.Metric;

/**
 * The host phases of a graph build (pruning, reverse links, entry points, reachability) at scale,
 * without a GPU: the k-NN step runs once on the CPU ({@link KnnFinder#CPU}, timed apart) and is cached
 * in {@code CACHE_DIR}, then {@link GraphBuilder#build} runs {@code REPEATS} times on it.
 *
 * <pre>
 * java ... org.gpuvectors.codec.graph.GraphBuildPhasesBenchmark CACHE_DIR (synthetic N | fmnist FILE) [REPEATS]
 * </pre>
 * Synthetic: N x 128 Gaussian clusters (1,000 centres, fixed seeds).
 */
public final class GraphBuildPhasesBenchmark {

  public static void main(String[] args) throws Exception {
    Path cache = Path.of(args[0]);
    Files.createDirectories(cache);
    float[][] vectors;
    String name;
    if (args[1].equals("fmnist")) {
      vectors = readImages(Path.of(args[2]));
      name = "fmnist";
    } else {
      vectors = clustered(Integer.parseInt(args[2]), 128);
      name = "synthetic-" + vectors.length;
    }
    int repeats = args.length > 3 ? Integer.parseInt(args[3]) : 3;
    int degree = GraphBuilder.DEFAULT_DEGREE;
    int buildDegree = GraphBuilder.buildDegree(java.util.OptionalInt.empty(), degree);
    FloatVectorValues values = FloatVectorValues.fromFloats(Arrays.asList(vectors), vectors[0].length);
    int[] knn = cachedKnn(cache.resolve(name + "-k" + buildDegree + ".knn"), values, buildDegree);
    System.out.printf(Locale.ROOT, "%s: %d x %d, degree %d, build_degree %d, %d cores%n", name, vectors.length,
        vectors[0].length, degree, buildDegree, Runtime.getRuntime().availableProcessors());
    for (int r = 0; r < repeats; r++) {
      GraphBuildPhases phases = new GraphBuildPhases();
      GraphLayout layout = GraphBuilder.build(values, Metric.L2, degree, buildDegree, 64, (v, k, m) -> knn.clone(), phases);
      System.out.printf(Locale.ROOT, "run %d: %s (adjacency hash %d, %d seeds, seeds hash %d)%n",
          r, phases, Arrays.hashCode(layout.adjacency()), layout.seeds().length, Arrays.hashCode(layout.seeds()));
    }
  }

  private static int[] cachedKnn(Path file, FloatVectorValues values, int k) throws IOException {
    int n = values.size();
    if (Files.exists(file)) {
      try (DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(Files.newInputStream(file)))) {
        int[] knn = new int[n * k];
        for (int i = 0; i < knn.length; i++) {
          knn[i] = in.readInt();
        }
        return knn;
      }
    }
    long s = System.nanoTime();
    int[] knn = KnnFinder.CPU.knn(values, k, Metric.L2);
    System.out.printf(Locale.ROOT, "k-NN step on the CPU (%s): %.1f s%n",
        n <= KnnFinder.EXACT_MAX_VECTORS ? "exact" : "NN-descent", (System.nanoTime() - s) / 1e9);
    try (DataOutputStream out = new DataOutputStream(new java.io.BufferedOutputStream(Files.newOutputStream(file)))) {
      for (int id : knn) {
        out.writeInt(id);
      }
    }
    return knn;
  }

  /** Gaussian clusters around 1,000 random centres (a smaller copy of the codec benchmarks' data). */
  private static float[][] clustered(int n, int dims) {
    Random random = new Random(1234);
    float[][] centres = new float[1000][dims];
    for (float[] c : centres) {
      for (int d = 0; d < dims; d++) {
        c[d] = random.nextFloat() * 10;
      }
    }
    Random noise = new Random(42);
    float[][] out = new float[n][dims];
    for (int i = 0; i < n; i++) {
      float[] c = centres[noise.nextInt(centres.length)];
      for (int d = 0; d < dims; d++) {
        out[i][d] = c[d] + (float) noise.nextGaussian();
      }
    }
    return out;
  }

  /** The idx3 images of Fashion-MNIST as floats. */
  private static float[][] readImages(Path file) throws IOException {
    try (DataInputStream in = new DataInputStream(new GZIPInputStream(Files.newInputStream(file), 1 << 16))) {
      in.readInt();
      int count = in.readInt();
      int rows = in.readInt();
      int cols = in.readInt();
      float[][] out = new float[count][rows * cols];
      byte[] pixels = new byte[rows * cols];
      for (float[] image : out) {
        in.readFully(pixels);
        for (int p = 0; p < pixels.length; p++) {
          image[p] = pixels[p] & 0xFF;
        }
      }
      return out;
    }
  }
}
