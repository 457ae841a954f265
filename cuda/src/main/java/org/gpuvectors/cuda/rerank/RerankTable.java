package org.gpuvectors.cuda.rerank;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The kernel argument of {@code gv_rerank_exact_table} (rerank_kernels.cu's {@code gv::RerankTable}, passed by
 * value): the candidate rows of several indexes re-ranked in one launch, entry e owning rows {@code firstRow[e]} up
 * to the next entry's first row, with its raw vectors and its queries (device addresses), and, for a re-rank given
 * the chunks' keys ({@link RerankParams#chunkKeys}), the entry's keys a chunk and chunks a row. The layout: two ints,
 * then three times {@link #MAX_ENTRIES} ints, then twice {@link #MAX_ENTRIES} addresses, little-endian ({@link
 * #BYTES}, checked against the .cu source by ParamLayoutTest).
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class RerankTable {
  /** Entries at most: rerank_kernels.cu's kRerankTableEntries. */
  public static final int MAX_ENTRIES = 64;
  public static final int BYTES = 8 + MAX_ENTRIES * 28;

  private final int[] firstRow = new int[MAX_ENTRIES];
  private final int[] chunkK = new int[MAX_ENTRIES];
  private final int[] chunks = new int[MAX_ENTRIES];
  private final long[] vectors = new long[MAX_ENTRIES];
  private final long[] queries = new long[MAX_ENTRIES];
  private int entries;

  /** Appends an entry: rows from {@code firstRow} on (ascending, the first entry's 0) over these addresses. */
  public void add(int first, long vectorsAddress, long queriesAddress) {
    add(first, vectorsAddress, queriesAddress, 0, 0);
  }

  /**
   * As {@link #add(int, long, long)}, the entry's rows holding {@code entryChunks} chunks of {@code entryChunkK} keys.
   */
  public void add(int first, long vectorsAddress, long queriesAddress, int entryChunkK, int entryChunks) {
    if (entries == MAX_ENTRIES) {
      throw new IllegalStateException("a re-rank table holds at most " + MAX_ENTRIES + " entries");
    }
    if (entries == 0 ? first != 0 : first < firstRow[entries - 1]) {
      throw new IllegalArgumentException("first rows must start at 0 and ascend: " + first);
    }
    firstRow[entries] = first;
    vectors[entries] = vectorsAddress;
    queries[entries] = queriesAddress;
    chunkK[entries] = entryChunkK;
    chunks[entries] = entryChunks;
    entries++;
  }

  int entries() {
    return entries;
  }

  public byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(entries).putInt(0);
    for (int e = 0; e < MAX_ENTRIES; e++) {
      b.putInt(firstRow[e]);
    }
    for (int e = 0; e < MAX_ENTRIES; e++) {
      b.putInt(chunkK[e]);
    }
    for (int e = 0; e < MAX_ENTRIES; e++) {
      b.putInt(chunks[e]);
    }
    for (int e = 0; e < MAX_ENTRIES; e++) {
      b.putLong(vectors[e]);
    }
    for (int e = 0; e < MAX_ENTRIES; e++) {
      b.putLong(queries[e]);
    }
    return b.array();
  }
}
