package org.gpuvectors.cuda.graph;

import org.gpuvectors.cuda.runtime.ParamTable;
import org.gpuvectors.cuda.runtime.StructLayout;

/**
 * Parameters of one graph-search launch ({@code gv_graph_search}, graph_search.cu); mirrors {@code
 * gv::GraphSearchParams} in common.cuh (120 bytes, little-endian; declared once in {@link #LAYOUT}, checked by
 * ParamLayoutTest). Device addresses are longs; 0 = none for the optional accept mask.
 *
 * <p>Block q searches query q from the seeds and writes its k best (distance, ordinal) pairs at
 * {@code outK / outIdx + q * k}.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class GraphSearchParams {
  /** The layout of {@code gv::GraphSearchParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<GraphSearchParams> LAYOUT =
      StructLayout.<GraphSearchParams>struct("GraphSearchParams")
          .i64("vectors", p -> p.vectors)
          .i64("graph", p -> p.graph)
          .i64("seeds", p -> p.seeds)
          .i64("queries", p -> p.queries)
          .i64("acceptBits", p -> p.acceptBits)
          .i64("outK", p -> p.outK)
          .i64("outIdx", p -> p.outIdx)
          .i64("acceptRowWords", p -> p.acceptRowWords)
          .i32("numQueries", p -> p.numQueries)
          .i32("n", p -> p.n)
          .i32("dims", p -> p.dims)
          .i32("degree", p -> p.degree)
          .i32("numSeeds", p -> p.numSeeds)
          .i32("k", p -> p.k)
          .i32("width", p -> p.width)
          .i32("batch", p -> p.batch)
          .i32("parents", p -> p.parents)
          .i32("teamSize", p -> p.teamSize)
          .i32("hashWords", p -> p.hashWords)
          .i32("metric", p -> p.metric)
          .i32("maxIterations", p -> p.maxIterations)
          .pad32("pad")
          .build();
  public static final int BYTES = LAYOUT.bytes();
  /** Entries of {@code gv::GraphSearchTable}, the parameter of {@code gv_graph_search_table} (common.cuh). */
  public static final int TABLE_ENTRIES = 32;
  /** Bytes of {@code gv::GraphSearchTable}: the entry count, padding, then the entries. */
  public static final int TABLE_BYTES = ParamTable.bytes(TABLE_ENTRIES, BYTES);

  public long vectors;
  long graph;
  long seeds;
  long queries;
  long acceptBits;
  long outK;
  long outIdx;
  long acceptRowWords;
  public int numQueries;
  int n;
  int dims;
  int degree;
  int numSeeds;
  int k;
  /** M: the internal list's size (k <= width). */
  int width;
  /** Candidate slots per iteration: a power of two >= parents * degree, >= 32. */
  int batch;
  /** Nodes expanded per iteration. */
  int parents;
  /** Threads per distance: a power of two, 1..32. */
  int teamSize;
  /** 32-bit words of the visited set (a Bloom filter), a power of two. */
  int hashWords;
  /** 0 = squared L2, 1 = inner product (selected largest). */
  int metric;
  int maxIterations;

  public byte[] encode() {
    return LAYOUT.encode(this);
  }

  /** {@code gv::GraphSearchTable} holding {@code entries} (1..{@link #TABLE_ENTRIES}); unused slots zero. */
  public static byte[] encodeTable(java.util.List<GraphSearchParams> entries) {
    return ParamTable.encode("graph search", TABLE_ENTRIES, LAYOUT, entries);
  }
}
