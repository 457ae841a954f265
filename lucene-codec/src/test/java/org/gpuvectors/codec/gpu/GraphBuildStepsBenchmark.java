package org.gpuvectors.codec.gpu;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.FashionMnistBenchmark;
import org.gpuvectors.codec.graph.GraphPruner;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.index.VectorRows;
import org.gpuvectors.cuda.device.GpuDevice;

/**
 * Where a Fashion-MNIST graph build's device steps spend their time (the phases of {@code IndexBuildBenchmark} are
 * coarser): the rows' copy out of the vectors (none for a flush's buffered vectors), their upload, the exact k-NN
 * search with the vectors as their own queries, pruning, reverse links on the host and on the GPU (checked equal). {@code reps} times each, medians, one GPU.
 *
 * <p>Args: {@code FMNIST_DIR [reps=7]}.
 */
public final class GraphBuildStepsBenchmark {

  public static void main(String[] args) throws Exception {
    float[][] train = FashionMnistBenchmark.readImages(Path.of(args[0]).resolve("train-images-idx3-ubyte.gz"));
    int reps = args.length > 1 ? Integer.parseInt(args[1]) : 7;
    FloatVectorValues vectors = FloatVectorValues.fromFloats(List.of(train), train[0].length);
    FloatVectorValues buffered = VectorRows.buffered(List.of(train), train[0].length); // as a flush hands them over
    int n = vectors.size();
    int dims = vectors.dimension();
    int k = 64;
    int degree = 32;
    String[] names = {"copy rows", "rows (flush: none)", "upload", "k-NN search (k+1)", "drop self", "prune (GPU)",
        "reverse links (host)", "reverse links (GPU)"};
    double[][] ms = new double[names.length][reps];
    try (GpuDevice device = GpuDevice.open(0)) {
      CudaBackend backend = new CudaBackend(device);
      for (int r = 0; r < reps; r++) {
        long t00 = System.nanoTime();
        VectorRows.copies(vectors, n, i -> i, Metric.L2);
        long t0 = System.nanoTime();
        float[][] rows = VectorRows.copies(buffered, n, i -> i, Metric.L2);
        long t1 = System.nanoTime();
        try (GpuBackend.HeldVectors held = backend.holdVectors(rows, n, dims, Metric.L2)) {
          long t2 = System.nanoTime();
          int[] found = held.nearestKOwn(k + 1);
          long t3 = System.nanoTime();
          int[] knn = GpuKnnGraph.own(held, n, k); // searches again: its own time minus the search's is the drop
          long t4 = System.nanoTime();
          int[] pruned = backend.prune(knn, n, k, degree);
          long t5 = System.nanoTime();
          int[] host = GraphPruner.addReverseLinks(pruned, n, degree);
          long t6 = System.nanoTime();
          int[] gpu = backend.reverseLinks(pruned, n, degree);
          long t7 = System.nanoTime();
          if (!Arrays.equals(host, gpu)) {
            throw new AssertionError("reverse links differ");
          }
          double[] step = {t0 - t00, t1 - t0, t2 - t1, t3 - t2, (t4 - t3) - (t3 - t2), t5 - t4, t6 - t5, t7 - t6};
          for (int s = 0; s < names.length; s++) {
            ms[s][r] = step[s] / 1e6;
          }
          if (found.length != n * (k + 1)) {
            throw new AssertionError("k-NN rows");
          }
        }
      }
    }
    System.out.printf(Locale.ROOT, "fashion-mnist %d x %d, k %d, degree %d, %d reps: median ms (min)%n", n, dims, k,
        degree, reps);
    for (int s = 0; s < names.length; s++) {
      double[] v = ms[s].clone();
      Arrays.sort(v);
      System.out.printf(Locale.ROOT, "  %-22s %8.1f  (%.1f)%n", names[s], v[v.length / 2], v[0]);
    }
  }
}
