package org.gpuvectors.cuda.ivf;

import org.gpuvectors.cuda.runtime.ParamTable;
import java.util.List;

/**
 * The kernel argument of {@code gv_ivf_pq_query_tables_table} and {@code gv_ivf_pq_table_keys_table}
 * (ivf_pq_tables.cu's {@code gv::IvfPqScanTable}, passed by value): the small-batch scans of several indexes in one
 * launch, one {@link IvfPqScanParams} per entry, in {@link ParamTable}'s layout ({@link #BYTES}; checked against the
 * .cu source by ParamLayoutTest).
 */
public final class IvfPqScanTable {
  /** Entries at most: ivf_pq_tables.cu's kPqScanTableEntries. */
  public static final int MAX_ENTRIES = 24;
  public static final int BYTES = ParamTable.bytes(MAX_ENTRIES, IvfPqScanParams.BYTES);

  private IvfPqScanTable() {}

  /** The argument for these entries (1 to {@link #MAX_ENTRIES}). */
  public static byte[] encode(List<IvfPqScanParams> entries) {
    return ParamTable.encode("IVF-PQ scan", MAX_ENTRIES, IvfPqScanParams.BYTES,
        entries.stream().map(IvfPqScanParams::encode).toList());
  }
}
