package org.gpuvectors.codec.ivf;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.index.Metric;

/**
 * Where an IVF build's time goes, step by step, on Fashion-MNIST's vectors (or any IDX3 file): the k-means of the
 * coarse quantizer (default nlist 245 on a 15,680-point sample) and of the 98 PQ sub-quantizers (256 codewords on
 * 16,384 points), the list assignment of all vectors in {@link IvfBuilder#ASSIGN_BLOCK} blocks and PQ encoding, each
 * split into the assigner's hold (the upload), its nearest-centroid steps (assignment, encoding), its Lloyd steps
 * (k-means: nearest centroids and their means) and the host's own work.
 * Medians of {@code reps} runs; milliseconds.
 *
 * <p>Args: {@code FMNIST_DIR [reps=5]}.
 */
public final class AssignmentBenchmark {

  /** An assigner that times its holds and steps. */
  private static final class Timed implements Assigner {
    private final Assigner inner;
    long holdNanos;
    long nearestNanos;
    long updateNanos;
    int steps;

    Timed(Assigner inner) {
      this.inner = inner;
    }

    @Override
    public Held hold(float[][] points, int count, int groups, Metric metric) throws IOException {
      long t = System.nanoTime();
      Held held = inner.hold(points, count, groups, metric);
      holdNanos += System.nanoTime() - t;
      return new Held() {
        @Override
        public int[] nearest(float[] centroids, int k) throws IOException {
          long t = System.nanoTime();
          int[] out = held.nearest(centroids, k);
          nearestNanos += System.nanoTime() - t;
          steps++;
          return out;
        }

        @Override
        public int[] update(float[] centroids, int k) throws IOException {
          long t = System.nanoTime();
          int[] counts = held.update(centroids, k);
          updateNanos += System.nanoTime() - t;
          steps++;
          return counts;
        }

        @Override
        public void close() {
          held.close();
        }
      };
    }
  }

  public static void main(String[] args) throws Exception {
    float[][] vectors = org.gpuvectors.codec.FashionMnistBenchmark.readImages(Path.of(args[0]).resolve("train-images-idx3-ubyte.gz"));
    int reps = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    GpuSearchService service = GpuSearchServices.current();
    System.out.println("GPU: " + (service.gpuActive() ? service.deviceName() : service.unusableReason()));
    int n = vectors.length;
    int dims = vectors[0].length;
    int nlist = IvfBuilder.nlist(java.util.OptionalInt.empty(), n);
    int m = ProductQuantizer.defaultM(dims);
    long heap = Runtime.getRuntime().maxMemory();
    int coarseSamples = TrainingSampleSize.forLists(n, nlist, dims, KMeans.DEFAULT_ITERATIONS, heap);
    float[][] coarseSample = sample(vectors, coarseSamples, 1);
    float[][] pqSample = sample(vectors, TrainingSampleSize.forCodebooks(n, 256, dims, heap), 2);
    System.out.printf(Locale.ROOT, "%d x %d, nlist %d, pq_m %d; medians of %d runs, ms%n", n, dims, nlist, m, reps);
    System.out.printf(Locale.ROOT, "%-28s %9s %9s %9s %9s %9s %7s%n", "step", "total", "hold", "nearest", "update",
        "host", "steps");
    List<double[]> coarse = new ArrayList<>();
    List<double[]> pq = new ArrayList<>();
    List<double[]> assign = new ArrayList<>();
    List<double[]> encode = new ArrayList<>();
    for (int r = 0; r < reps; r++) {
      Timed a = new Timed(service.buildAcceleration().assigner());
      long t = System.nanoTime();
      float[][] centroids = KMeans.train(coarseSample, nlist, Metric.L2, KMeans.DEFAULT_ITERATIONS, 42, a);
      coarse.add(row(t, a));

      a = new Timed(service.buildAcceleration().assigner());
      t = System.nanoTime();
      ProductQuantizer quantizer = ProductQuantizer.train(pqSample, m, 8, KMeans.DEFAULT_ITERATIONS, 42, a);
      pq.add(row(t, a));

      float[] flat = new float[nlist * dims];
      for (int c = 0; c < nlist; c++) {
        System.arraycopy(centroids[c], 0, flat, c * dims, dims);
      }
      a = new Timed(service.buildAcceleration().assigner());
      t = System.nanoTime();
      for (int start = 0; start < n; start += IvfBuilder.ASSIGN_BLOCK) {
        int count = Math.min(IvfBuilder.ASSIGN_BLOCK, n - start);
        float[][] block = Arrays.copyOfRange(vectors, start, start + count);
        try (Assigner.Held held = a.hold(block, count, 1, Metric.L2)) {
          held.nearest(flat, nlist);
        }
      }
      assign.add(row(t, a));

      a = new Timed(service.buildAcceleration().assigner());
      byte[] codes = new byte[n * m];
      t = System.nanoTime();
      for (int start = 0; start < n; start += IvfBuilder.ASSIGN_BLOCK) {
        int count = Math.min(IvfBuilder.ASSIGN_BLOCK, n - start);
        quantizer.encode(Arrays.copyOfRange(vectors, start, start + count), count, codes, start * m, a);
      }
      encode.add(row(t, a));
    }
    print("coarse k-means (" + nlist + ")", coarse);
    print("pq k-means (" + m + " x 256)", pq);
    print("assign (blocks of " + IvfBuilder.ASSIGN_BLOCK + ")", assign);
    print("encode (blocks)", encode);
    GpuSearchServices.closeDefault();
  }

  private static double[] row(long start, Timed a) {
    double total = (System.nanoTime() - start) / 1e6;
    double hold = a.holdNanos / 1e6;
    double nearest = a.nearestNanos / 1e6;
    double update = a.updateNanos / 1e6;
    return new double[] {total, hold, nearest, update, total - hold - nearest - update, a.steps};
  }

  private static void print(String step, List<double[]> runs) {
    double[] med = new double[6];
    for (int c = 0; c < 6; c++) {
      int col = c;
      double[] v = runs.stream().mapToDouble(x -> x[col]).sorted().toArray();
      med[c] = v[v.length / 2];
    }
    System.out.printf(Locale.ROOT, "%-28s %9.1f %9.1f %9.1f %9.1f %9.1f %7.0f%n", step, med[0], med[1], med[2], med[3],
        med[4], med[5]);
  }

  private static float[][] sample(float[][] vectors, int count, long seed) {
    int[] chosen = KMeans.sample(vectors.length, Math.min(count, vectors.length), new Random(seed));
    float[][] out = new float[chosen.length][];
    for (int i = 0; i < chosen.length; i++) {
      out[i] = vectors[chosen[i]];
    }
    return out;
  }
}
