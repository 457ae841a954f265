package org.gpuvectors.cuda;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * The kernel argument of {@code gv_ivf_pq_query_tables_table} and {@code gv_ivf_pq_table_keys_table}
 * (ivf_pq_tables.cu's {@code gv::IvfPqScanTable}, passed by value): the small-batch scans of several indexes in one
 * launch, one {@link IvfPqScanParams} per entry. Layout: the entry count, a pad int, then {@link #MAX_ENTRIES}
 * encoded {@link IvfPqScanParams} (unused ones zero), little-endian ({@link #BYTES}; checked against the .cu source
 * by ParamLayoutTest).
 */
final class IvfPqScanTable {
  /** Entries at most: ivf_pq_tables.cu's kPqScanTableEntries. */
  static final int MAX_ENTRIES = 24;
  static final int BYTES = 8 + MAX_ENTRIES * IvfPqScanParams.BYTES;

  private IvfPqScanTable() {}

  /** The argument for these entries (1 to {@link #MAX_ENTRIES}). */
  static byte[] encode(List<IvfPqScanParams> entries) {
    if (entries.isEmpty() || entries.size() > MAX_ENTRIES) {
      throw new IllegalArgumentException("an IVF-PQ scan table holds 1 to " + MAX_ENTRIES + " entries: " + entries.size());
    }
    ByteBuffer b = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(entries.size()).putInt(0);
    for (IvfPqScanParams p : entries) {
      b.put(p.encode());
    }
    return b.array();
  }
}
