package org.gpuvectors.codec;

import org.apache.lucene.index.VectorSimilarityFunction;
import org.gpuvectors.cuda.SearchResult;

/**
 * How far a distance the device computes from a float field's compact copy (its values rounded to bfloat16, the sums
 * in FP32) can be from the exact one, and so the best Lucene score a vector the device did not return can have: the
 * proof that the host's re-rank of the candidates it did return is the exact top k ({@link #holdsTopK}).
 *
 * <p>Rounding to bfloat16 (8 significant bits, to nearest) moves each value by at most {@code u = 2^-8} of itself, so
 * a vector x moves by at most {@code u ||x||}. With M the largest norm of the segment's vectors:
 * <ul>
 *   <li>inner product: {@code |<x~, q> - <x, q>| <= u ||x|| ||q|| <= u M ||q||};
 *   <li>cosine: the unit vectors move by at most {@code 2u}, so the cosine by at most {@code 2u};
 *   <li>Euclidean: {@code ||x - q|| >= ||x~ - q|| - u M}, a lower bound of the distance from the copy's.
 * </ul>
 * Each sum, on the device and in Lucene's scorer, adds a relative error of at most about {@code dims x 2^-24} of the
 * sum of its terms' magnitudes; the bounds take twice that on each side. A vector the device did not return has a
 * copy distance no better than the worst candidate's; when even the best exact score that allows is below the k-th
 * exact score of the candidates, it cannot be in the top k (equal scores are not enough: Lucene would rank an equal
 * score by the lower doc id).
 *
 * <p>Hand-written: no library here bounds bfloat16 rounding in a distance.
 */
final class CompactCopyBound {

  /** The largest relative change rounding a float to bfloat16 makes. */
  static final double BF16_UNIT = 0x1p-8;

  private CompactCopyBound() {}

  /** Relative error of one FP32 sum of {@code dims} terms, doubled (the device's and the scorer's). */
  static double sumError(int dims) {
    return 2.0 * (dims + 2) * 0x1p-24;
  }

  /**
   * The best Lucene score a vector the device did not return can have, from the worst device distance among the
   * candidates it did ({@code worst}: squared L2, or the inner product or cosine, as the kernel returns them).
   *
   * @param maxNorm the largest norm of the segment's vectors (Euclidean and inner products)
   * @param queryNorm the query's norm (inner products)
   */
  static float bestScoreOutside(
      VectorSimilarityFunction similarity, int dims, double maxNorm, double queryNorm, float worst) {
    double gamma = sumError(dims);
    double u = BF16_UNIT + gamma;
    return switch (similarity) {
      case EUCLIDEAN -> {
        double copyDistance = Math.sqrt(Math.max(0, worst * (1 - gamma)));
        double distance = Math.max(0, copyDistance - u * maxNorm);
        yield GpuSegmentSearcher.score(similarity, (float) Math.nextDown(distance * distance * (1 - gamma)));
      }
      case DOT_PRODUCT, MAXIMUM_INNER_PRODUCT -> {
        double dot = worst + Math.abs(worst) * gamma + u * maxNorm * queryNorm * (1 + BF16_UNIT);
        yield GpuSegmentSearcher.score(similarity, (float) Math.nextUp(dot));
      }
      case COSINE -> GpuSegmentSearcher.score(similarity, (float) Math.nextUp(worst + 2 * u + 2 * gamma));
    };
  }

  /**
   * {@link #holdsTopK(VectorSimilarityFunction, int, double, double, long, int, float, int, float)} for query {@code q}
   * of a device result ({@code query}: its floats): the candidates it returned and the worst of their distances.
   */
  static boolean holdsTopK(
      VectorSimilarityFunction similarity, double maxNorm, float[] query, long accepted, SearchResult result, int q,
      int k, float kthScore) {
    int returned = result.count(q);
    float worst = returned == 0 ? Float.NaN : result.distance(q, returned - 1);
    return holdsTopK(similarity, query.length, maxNorm, norm(query), accepted, returned, worst, k, kthScore);
  }

  /** The Euclidean norm of {@code v}, summed in double. */
  static double norm(float[] v) {
    double s = 0;
    for (float x : v) {
      s += (double) x * x;
    }
    return Math.sqrt(s);
  }

  /**
   * Whether the {@code returned} candidates hold the exact top {@code k} of the {@code accepted} vectors: they are all
   * of them, or the best score a vector the device did not return can have is below the candidates' k-th exact score
   * ({@code kthScore}).
   */
  static boolean holdsTopK(
      VectorSimilarityFunction similarity, int dims, double maxNorm, double queryNorm, long accepted, int returned,
      float worst, int k, float kthScore) {
    if (returned >= accepted) {
      return true;
    }
    if (returned < k || Double.isFinite(maxNorm) == false || Float.isNaN(worst)) {
      return false;
    }
    return bestScoreOutside(similarity, dims, maxNorm, queryNorm, worst) < kthScore;
  }
}
