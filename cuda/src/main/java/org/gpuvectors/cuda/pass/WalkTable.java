package org.gpuvectors.cuda.pass;

import java.util.List;
import org.gpuvectors.cuda.device.GpuDevice;

/**
 * The table launch of a pass that walks several small groups' graphs at once (the graph indexes'). The pass declares
 * it; the index type implements it ({@link ResidentIndex#walkTable}), so the pass knows no index type.
 */
public interface WalkTable {

  /**
   * Queries from which a group walks alone, planned for its own size: a pass with such a group launches no table
   * (one launch per segment would run the small ones one after another, each on a few multiprocessors).
   */
  int groupQueries();

  /**
   * Enqueues the walks of the pass's groups in {@code walked} as table launches; {@code at[g]}: group g's addresses in
   * the pass. Caller holds the device lock.
   */
  void enqueue(GpuDevice device, List<SearchGroup> groups, boolean[] walked, GroupAddresses[] at);
}
