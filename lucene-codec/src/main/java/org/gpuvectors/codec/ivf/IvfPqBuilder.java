package org.gpuvectors.codec.ivf;

import java.io.IOException;
import java.util.Random;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.util.ArrayUtil;
import org.gpuvectors.codec.index.VectorRows;
import org.gpuvectors.codec.index.Metric;

/**
 * Builds a segment field's {@code ivf_pq} structure (Faiss's IVFADC, Jégou et al. section 5): the
 * coarse lists exactly as {@code ivf_flat} builds them ({@link IvfBuilder}), then a {@link
 * ProductQuantizer} trained on a sample of residuals (vector minus its list's centroid; cosine: of
 * the normalised vector), then every vector's residual encoded. The vectors are streamed in blocks
 * as for the lists; the training sample's size is {@link TrainingSampleSize#forCodebooks}, and besides the lists'
 * ordinals and list numbers (a few ints a vector) the codes ({@code m} bytes a vector) are the only per-vector state held.
 */
public final class IvfPqBuilder {

  /** Added to the seed for the residual sample, so that it is not the coarse quantizer's sample. */
  private static final long SAMPLE_SEED_OFFSET = 1;

  private IvfPqBuilder() {}

  /**
   * Whether the codes of {@code n} vectors of {@code m} bytes fit the build's one code array (at most {@link
   * ArrayUtil#MAX_ARRAY_LENGTH} bytes: 67 million vectors at 128 dimensions and the default pq_m of 32). The writer
   * keeps larger segments flat (logged) rather than failing their flush or merge.
   */
  public static boolean fits(int n, int m) {
    return (long) n * m <= ArrayUtil.MAX_ARRAY_LENGTH;
  }

  /**
   * The {@code ivf_pq} structure of {@code vectors} (ordinals = positions in {@code vectors}).
   *
   * @param m sub-quantizers (must divide the dimension)
   * @param bits bits per sub-quantizer code, at most 8
   * @param metric how lists rank vectors (cosine: vectors are normalised here, centroids too)
   */
  public static IvfPqLayout build(
      FloatVectorValues vectors, int nlist, int m, int bits, Metric metric, int iterations, long seed,
      Assigner assigner) throws IOException {
    return build(vectors, nlist, m, bits, metric, iterations, seed, assigner, new IvfBuildPhases());
  }

  /**
   * As {@link #build(FloatVectorValues, int, int, int, Metric, int, long, Assigner)}, ending in {@code phases}
   * the lists' phases ({@link IvfBuilder#build}), then {@link IvfBuildPhases.Phase#PQ_TRAIN} (residual sample
   * and codebooks) and {@link IvfBuildPhases.Phase#ENCODE}.
   */
  public static IvfPqLayout build(
      FloatVectorValues vectors, int nlist, int m, int bits, Metric metric, int iterations, long seed,
      Assigner assigner, IvfBuildPhases phases) throws IOException {
    int n = vectors.size();
    int dims = vectors.dimension();
    if (fits(n, m) == false) {
      throw new IllegalArgumentException(
          "ivf_pq codes of " + n + " vectors x " + m + " bytes do not fit one array; use a smaller pq_m");
    }
    IvfLayout lists = IvfBuilder.build(vectors, nlist, metric, iterations, seed, assigner, phases);
    int[] listOf = lists.listOfOrdinals();

    int ksub = 1 << bits;
    int samples = TrainingSampleSize.forCodebooks(n, ksub, dims, Runtime.getRuntime().maxMemory());
    int[] chosen = KMeans.sample(n, samples, new Random(seed + SAMPLE_SEED_OFFSET));
    float[][] training = new float[samples][];
    VectorRows.fill(vectors, samples, i -> chosen[i], training,
        (values, ord) -> residual(values, ord, lists, listOf, metric));
    ProductQuantizer pq = ProductQuantizer.train(training, m, bits, iterations, seed, assigner);
    training = null; // the sample can go before the encoding pass
    phases.end(IvfBuildPhases.Phase.PQ_TRAIN);

    byte[] codes = new byte[n * m];
    float[][] block = new float[Math.min(IvfBuilder.ASSIGN_BLOCK, n)][];
    for (int start = 0; start < n; start += IvfBuilder.ASSIGN_BLOCK) {
      int count = Math.min(IvfBuilder.ASSIGN_BLOCK, n - start);
      int first = start;
      VectorRows.fill(vectors, count, i -> first + i, block, (values, ord) -> residual(values, ord, lists, listOf, metric));
      pq.encode(block, count, codes, start * m, assigner);
    }
    phases.end(IvfBuildPhases.Phase.ENCODE);
    return new IvfPqLayout(lists, pq, codes);
  }

  /** Vector {@code ord} (normalised for cosine) minus the centroid of its list. */
  private static float[] residual(FloatVectorValues vectors, int ord, IvfLayout lists, int[] listOf, Metric metric)
      throws IOException {
    float[] r = VectorRows.copy(vectors, ord, metric);
    float[] c = lists.centroids()[listOf[ord]];
    for (int d = 0; d < r.length; d++) {
      r[d] -= c[d];
    }
    return r;
  }
}
