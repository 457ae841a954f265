package org.gpuvectors.cuda.pass;

import java.util.Arrays;
import java.util.Objects;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.select.KSelect;

/**
 * The queries of a batch that search one {@link DeviceIndex}: {@code numQueries} query vectors,
 * row-major in {@code queries} or one array per query in {@code queryRows} (exactly one of the two
 * is given: rows let a caller hand over its own arrays, with no copy into one), the k wanted (per
 * query the k best, best first; callers wanting fewer take a prefix), the search parameters of the
 * index's kind ({@link SearchParams}: the lists an IVF index probes, a graph's search width or its
 * exact search; the index refuses another kind's, {@link DeviceIndex#checkSearch}), and which vectors
 * each query may return.
 *
 * <p>Accepted vectors: {@code sharedMask} applies to every query (null: all vectors), unless {@code
 * queryMasks} is given, which holds one mask per query (a null entry accepts all). Masks are bit
 * {@code ord % 64} of word {@code ord / 64}, at least {@code (size + 63) / 64} words.
 */
public record SearchGroup(
    DeviceIndex index,
    float[] queries,
    int numQueries,
    int k,
    SearchParams params,
    long[] sharedMask,
    long[][] queryMasks,
    float[][] queryRows) {

  public SearchGroup {
    Objects.requireNonNull(index, "index");
    if ((queries == null) == (queryRows == null)) {
      throw new IllegalArgumentException("row-major queries or query rows, exactly one of them");
    }
    if (numQueries < 0) {
      throw new IllegalArgumentException("numQueries must be >= 0: " + numQueries);
    }
    if (queries != null && (long) numQueries * index.dims() > queries.length) {
      throw new IllegalArgumentException(
          "need numQueries * dims query floats: numQueries=" + numQueries + " dims=" + index.dims()
              + " length=" + queries.length);
    }
    if (queryRows != null) {
      if (queryRows.length < numQueries) {
        throw new IllegalArgumentException("need numQueries query rows: numQueries=" + numQueries
            + " rows=" + queryRows.length);
      }
      for (int q = 0; q < numQueries; q++) {
        if (queryRows[q].length != index.dims()) {
          throw new IllegalArgumentException(
              "query " + q + " has " + queryRows[q].length + " dimensions, the index " + index.dims());
        }
      }
    }
    if (k < 1 || k > KSelect.MAX_K) {
      throw new IllegalArgumentException("k must be in [1, " + KSelect.MAX_K + "]: " + k);
    }
    Objects.requireNonNull(params, "params");
    index.checkSearch(params, k); // another kind's parameters, or past the kernels' limits: before a pass starts
    if (sharedMask != null && queryMasks != null) {
      throw new IllegalArgumentException("a shared mask or per-query masks, not both");
    }
    int words = maskWords(index.size());
    if (sharedMask != null && sharedMask.length < words) {
      throw new IllegalArgumentException("mask needs " + words + " words, got " + sharedMask.length);
    }
    if (queryMasks != null) {
      if (queryMasks.length != numQueries) {
        throw new IllegalArgumentException("one mask per query: " + queryMasks.length + " != " + numQueries);
      }
      for (long[] mask : queryMasks) {
        if (mask != null && mask.length < words) {
          throw new IllegalArgumentException("mask needs " + words + " words, got " + mask.length);
        }
      }
    }
  }

  /** A group of row-major queries. */
  public SearchGroup(DeviceIndex index, float[] queries, int numQueries, int k, SearchParams params,
                     long[] sharedMask, long[][] queryMasks) {
    this(index, queries, numQueries, k, params, sharedMask, queryMasks, null);
  }

  /** A group of row-major queries searching a flat index ({@link SearchParams#FLAT}). */
  public SearchGroup(DeviceIndex index, float[] queries, int numQueries, int k, long[] sharedMask,
                     long[][] queryMasks) {
    this(index, queries, numQueries, k, SearchParams.FLAT, sharedMask, queryMasks, null);
  }

  /** A group of the first {@code numQueries} of {@code rows}, one array per query (read, never written). */
  public static SearchGroup ofRows(DeviceIndex index, float[][] rows, int numQueries, int k, SearchParams params,
                                   long[] sharedMask, long[][] queryMasks) {
    return new SearchGroup(index, null, numQueries, k, params, sharedMask, queryMasks, rows);
  }

  /** Copies queries {@code [from, from + count)} row-major into {@code dst} at {@code dstOffset}. */
  public void copyQueries(int from, int count, float[] dst, int dstOffset) {
    int dims = index.dims();
    if (queries != null) {
      System.arraycopy(queries, from * dims, dst, dstOffset, count * dims);
      return;
    }
    for (int q = 0; q < count; q++) {
      System.arraycopy(queryRows[from + q], 0, dst, dstOffset + q * dims, dims);
    }
  }

  /** A copy of query {@code q}. */
  public float[] query(int q) {
    int dims = index.dims();
    return queries != null ? Arrays.copyOfRange(queries, q * dims, (q + 1) * dims) : queryRows[q].clone();
  }

  /** 64-bit words of an accept mask over {@code size} vectors. */
  public static int maskWords(int size) {
    return (size + 63) >>> 6;
  }
}
