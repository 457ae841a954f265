package org.gpuvectors.codec.ivf;

/**
 * How many vectors a build draws to train its k-means on: the coarse quantizer's ({@link #forLists}) and a product
 * quantizer's codebooks ({@link #forCodebooks}). Pure functions of the sizes and the heap, so that a build is
 * reproducible: the same vectors, parameters and maximum heap give the same sample (the seed is fixed), and the count
 * used is recorded in the index ({@link IvfBuilder.Training}).
 *
 * <p>The sample sits on the heap for the whole k-means, {@code dims} floats a point, so it is bounded by a share of
 * the heap ({@link #HEAP_SHARE}) rather than by a fixed size: a fixed 128 MB left a 100M x 128 segment with 10,000
 * lists 26 points a list, below what k-means needs (Faiss warns below 39), and the share of a query's true neighbours
 * in its probed lists keeps growing with the points a list up to Faiss's 256 ({@code CoarseCoverageBenchmark}).
 */
public final class TrainingSampleSize {

  /**
   * Points a list the coarse quantizer gets when the heap allows, whatever the k-means costs (the measurement above:
   * most of the loss is below this; Faiss warns below 39).
   */
  static final int MIN_POINTS_PER_LIST = 64;
  /** Points a list the coarse quantizer gets at most (Faiss's {@code max_points_per_centroid}). */
  static final int MAX_POINTS_PER_LIST = 256;

  /**
   * The heap a sample may take: a sixteenth of the maximum heap. Elasticsearch merges with up to four threads at once
   * ({@code index.merge.scheduler.max_thread_count}: min(4, cores / 2)), each of which may train a quantizer, so
   * their samples take at most a quarter of the heap together, next to the indexing buffer (10% by default) and what
   * searches hold. At Elasticsearch's usual 31 GB heap that is about 1.9 GB: 3.8 million points of 128 floats, more
   * than 10,000 lists x 256.
   */
  static final int HEAP_SHARE = 16;

  private TrainingSampleSize() {}

  /**
   * The sample of the coarse quantizer of {@code n} vectors of {@code dims} floats cut into {@code nlist} lists by
   * {@code iterations} Lloyd iterations: {@value #MIN_POINTS_PER_LIST} to {@value #MAX_POINTS_PER_LIST} points a list,
   * above the minimum only while the k-means costs no more than the pass that assigns every vector to its list
   * afterwards ({@code samples x iterations <= n}: both cost {@code nlist x dims} a point). That bound is for the CPU
   * path. A 1M x 768 segment with 1,000 lists, timed on 2 cores (64 ns a point and centroid): 66,666 points train in
   * about 64 s, as long as the assignment pass takes (the old 43,690 points: 42 s); 256 a list would take 245 s, the
   * coarse step 3 times as long, for 2-3 points of coverage. A large segment, whose lists are long, gets the maximum
   * for a fraction of its assignment pass. The same rule with or without a GPU, so that where a segment was built
   * does not change its index. Never more than the heap share holds ({@link #HEAP_SHARE}), never fewer than {@code
   * nlist} (k-means needs a point a centroid), never more than {@code n}.
   *
   * @param maxHeapBytes the heap the JVM may use ({@link Runtime#maxMemory()})
   */
  public static int forLists(int n, int nlist, int dims, int iterations, long maxHeapBytes) {
    if (nlist < 1 || nlist > n) {
      throw new IllegalArgumentException("nlist must be in [1, " + n + "]: " + nlist);
    }
    long costBound = n / Math.max(1, iterations);
    long wanted = Math.clamp(costBound, (long) nlist * MIN_POINTS_PER_LIST, (long) nlist * MAX_POINTS_PER_LIST);
    return bounded(n, nlist, wanted, heapRows(dims, 1, maxHeapBytes));
  }

  /**
   * The sample of a product quantizer's codebooks of {@code ksub} codewords each over residuals of {@code dims}
   * floats: {@link ProductQuantizer#TRAINING_POINTS_PER_CODEWORD} a codeword (a codebook of 256 codewords learns its
   * sub-space of 4 to 16 floats from far fewer points than a list needs of the whole space), within the heap share,
   * of which the sample takes twice its floats (the CPU {@link Assigner} copies each point's sub-vectors into rows of
   * their own), never fewer than {@code ksub}, never more than {@code n} (a segment of fewer vectors than codewords
   * trains on all of them: {@link ProductQuantizer#train} gives each a codeword).
   */
  public static int forCodebooks(int n, int ksub, int dims, long maxHeapBytes) {
    if (ksub < 1) {
      throw new IllegalArgumentException("ksub must be at least 1: " + ksub);
    }
    long wanted = (long) ksub * ProductQuantizer.TRAINING_POINTS_PER_CODEWORD;
    return bounded(n, ksub, wanted, heapRows(dims, 2, maxHeapBytes));
  }

  /** Points of {@code dims} floats, {@code copies} copies of each, that fit the heap share. */
  static long heapRows(int dims, int copies, long maxHeapBytes) {
    return maxHeapBytes / HEAP_SHARE / ((long) dims * Float.BYTES * copies);
  }

  /** {@code wanted} within the heap's rows, at least {@code centroids}, at most {@code n}. */
  private static int bounded(int n, int centroids, long wanted, long heapRows) {
    return (int) Math.min(n, Math.max(centroids, Math.min(wanted, heapRows)));
  }
}
