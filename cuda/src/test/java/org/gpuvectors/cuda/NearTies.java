package org.gpuvectors.cuda;

import java.util.Random;
import org.gpuvectors.cuda.flat.GpuFlatIndexGpuTest;

/**
 * Data that no candidate certificate can pass (the TF32 and FP16 candidate tests): each "tie" query is an integer point
 * c (values 50..100, 128 dims) with 256 vectors at squared distance exactly 9 (c +- 3 e_i), more than k' = 200 even at
 * k = 100, so the k-th and the k'-th keys tie; the other queries and the filler vectors are random pixels (0..255).
 * Integers below 2^11 are exact in TF32 and, after the scales, in FP16, and every sum below 2^24 is exact in FP32, so
 * the FP32 path sees the ties exactly too. Tie and other queries alternate (a fallback's rows are not one block);
 * per-query masks keep every other pair of queries whole and 95 % of the vectors for the rest (> 200 of each tie set).
 */
public record NearTies(int n, int dims, float[] vectors, float[] queries, boolean[] tie, long[][] masks) {

  public static NearTies make(int ties, int others, int filler, Random r) {
    int dims = 128;
    int n = ties * 2 * dims + filler;
    float[] vectors = new float[n * dims];
    float[] centres = new float[ties * dims];
    for (int t = 0; t < ties; t++) {
      for (int i = 0; i < dims; i++) {
        centres[t * dims + i] = 50 + r.nextInt(51);
      }
      for (int j = 0; j < 2 * dims; j++) {
        int v = t * 2 * dims + j;
        System.arraycopy(centres, t * dims, vectors, v * dims, dims);
        vectors[v * dims + j / 2] += j % 2 == 0 ? 3 : -3;
      }
    }
    for (int v = ties * 2 * dims; v < n; v++) {
      for (int i = 0; i < dims; i++) {
        vectors[v * dims + i] = r.nextInt(256);
      }
    }
    int nq = ties + others;
    float[] queries = new float[nq * dims];
    boolean[] tie = new boolean[nq];
    for (int q = 0, t = 0; q < nq; q++) {
      tie[q] = q % 2 == 0;
      for (int i = 0; i < dims; i++) {
        queries[q * dims + i] = tie[q] ? centres[t * dims + i] : r.nextInt(256);
      }
      t += tie[q] ? 1 : 0;
    }
    long[][] masks = new long[nq][];
    for (int q = 0; q < nq; q++) {
      masks[q] = q % 4 < 2 ? null : GpuFlatIndexGpuTest.bits(n, 0.95, r);
    }
    return new NearTies(n, dims, vectors, queries, tie, masks);
  }

  public int numQueries() {
    return tie.length;
  }
}
