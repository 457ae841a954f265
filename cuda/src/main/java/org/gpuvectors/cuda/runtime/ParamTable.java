package org.gpuvectors.cuda.runtime;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * The by-value kernel argument of the table launches ({@code gv_graph_search_table}, {@code
 * gv_fused_search_table_kK}, {@code gv_ivf_pq_query_tables_table}, {@code gv_ivf_pq_table_keys_table}): the entry
 * count, a pad int, then {@code capacity} encoded parameter blocks (unused ones zero), little-endian, as the CUDA
 * side's {@code {int entries; int pad; P entry[N];}} lays it out. Entries come encoded, or as values that their
 * {@link StructLayout} writes straight into the table.
 */
public final class ParamTable {
  private ParamTable() {}

  /** Bytes of a table of {@code capacity} entries of {@code entryBytes} each. */
  public static int bytes(int capacity, int entryBytes) {
    return 8 + capacity * entryBytes;
  }

  /**
   * The table holding {@code entries} (1 to {@code capacity}, each {@code entryBytes} long); {@code what} names it in
   * the error.
   */
  public static byte[] encode(String what, int capacity, int entryBytes, List<byte[]> entries) {
    checkCount(what, capacity, entries.size());
    ByteBuffer b = ByteBuffer.allocate(bytes(capacity, entryBytes)).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(entries.size()).putInt(0);
    for (byte[] e : entries) {
      if (e.length != entryBytes) {
        throw new IllegalArgumentException(what + " table entry of " + e.length + " bytes, not " + entryBytes);
      }
      b.put(e);
    }
    return b.array();
  }

  /**
   * The table holding {@code entries} (1 to {@code capacity}) encoded by {@code layout} straight into it; {@code
   * what} names it in the error.
   */
  public static <T> byte[] encode(String what, int capacity, StructLayout<T> layout, List<? extends T> entries) {
    checkCount(what, capacity, entries.size());
    byte[] table = new byte[bytes(capacity, layout.bytes())];
    ByteBuffer.wrap(table).order(ByteOrder.LITTLE_ENDIAN).putInt(0, entries.size());
    for (int e = 0; e < entries.size(); e++) {
      layout.encodeInto(entries.get(e), table, 8 + e * layout.bytes());
    }
    return table;
  }

  private static void checkCount(String what, int capacity, int entries) {
    if (entries < 1 || entries > capacity) {
      throw new IllegalArgumentException("a " + what + " table holds 1.." + capacity + " entries: " + entries);
    }
  }
}
