package org.gpuvectors.cuda;

import java.util.Arrays;
import java.util.Objects;

/**
 * The queries of a batch that search one {@link DeviceIndex}: {@code numQueries} query vectors,
 * row-major in {@code queries} or one array per query in {@code queryRows} (exactly one of the two
 * is given: rows let a caller hand over its own arrays, with no copy into one), the k wanted (per
 * query the k best, best first; callers wanting fewer take a prefix), the lists an IVF index probes
 * per query ({@code nprobe} >= 1, capped at its nlist; for a graph index its search width: the beam
 * keeps max(nprobe, k) nodes, and {@link GpuGraphIndex#EXACT} asks for the exact search of the
 * accepted vectors; ignored by flat indexes), and which vectors each query may return.
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
    int nprobe,
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
    if (nprobe < 1) {
      throw new IllegalArgumentException("nprobe must be >= 1: " + nprobe);
    }
    if (index instanceof GpuIvfFlatIndex ivf) {
      ivf.probes(nprobe); // refuses what its coarse step cannot select, before a pass starts
    } else if (index instanceof GpuIvfPqIndex pq) {
      pq.probes(nprobe);
    } else if (index instanceof GpuGraphIndex) {
      GpuGraphIndex.checkSearchWidth(nprobe, k); // refuses a width past the kernel's, before a pass starts
    }
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
  public SearchGroup(DeviceIndex index, float[] queries, int numQueries, int k, int nprobe, long[] sharedMask,
                     long[][] queryMasks) {
    this(index, queries, numQueries, k, nprobe, sharedMask, queryMasks, null);
  }

  /** A group of row-major queries with nprobe 1 (for flat indexes, which ignore it). */
  public SearchGroup(DeviceIndex index, float[] queries, int numQueries, int k, long[] sharedMask,
                     long[][] queryMasks) {
    this(index, queries, numQueries, k, 1, sharedMask, queryMasks, null);
  }

  /** A group of the first {@code numQueries} of {@code rows}, one array per query (read, never written). */
  public static SearchGroup ofRows(DeviceIndex index, float[][] rows, int numQueries, int k, int nprobe,
                                   long[] sharedMask, long[][] queryMasks) {
    return new SearchGroup(index, null, numQueries, k, nprobe, sharedMask, queryMasks, rows);
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
