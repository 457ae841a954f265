package org.gpuvectors.cuda;

import org.gpuvectors.cuda.runtime.ParamTable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Parameters of one graph-search launch ({@code gv_graph_search}, graph_search.cu); mirrors {@code
 * gv::GraphSearchParams} in common.cuh (120 bytes, little-endian; member by member checked by ParamLayoutTest).
 * Device addresses are longs; 0 = none for the optional accept mask.
 *
 * <p>Block q searches query q from the seeds and writes its k best (distance, ordinal) pairs at
 * {@code outK / outIdx + q * k}.
 *
 * <p>Not thread-safe (a plain value object).
 */
final class GraphSearchParams {
  static final int BYTES = 120;
  /** Entries of {@code gv::GraphSearchTable}, the parameter of {@code gv_graph_search_table} (common.cuh). */
  static final int TABLE_ENTRIES = 32;
  /** Bytes of {@code gv::GraphSearchTable}: the entry count, padding, then the entries. */
  static final int TABLE_BYTES = ParamTable.bytes(TABLE_ENTRIES, BYTES);

  long vectors;
  long graph;
  long seeds;
  long queries;
  long acceptBits;
  long outK;
  long outIdx;
  long acceptRowWords;
  int numQueries;
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
  /** To the struct's 8-byte alignment (unused). */
  int pad;

  byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(vectors).putLong(graph).putLong(seeds).putLong(queries).putLong(acceptBits).putLong(outK)
        .putLong(outIdx).putLong(acceptRowWords);
    b.putInt(numQueries).putInt(n).putInt(dims).putInt(degree).putInt(numSeeds).putInt(k).putInt(width).putInt(batch)
        .putInt(parents).putInt(teamSize).putInt(hashWords).putInt(metric).putInt(maxIterations)
        .putInt(pad);
    return b.array();
  }

  /** {@code gv::GraphSearchTable} holding {@code entries} (1..{@link #TABLE_ENTRIES}); unused slots zero. */
  static byte[] encodeTable(java.util.List<GraphSearchParams> entries) {
    return ParamTable.encode("graph search", TABLE_ENTRIES, BYTES,
        entries.stream().map(GraphSearchParams::encode).toList());
  }
}
