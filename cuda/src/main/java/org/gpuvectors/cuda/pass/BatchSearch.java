package org.gpuvectors.cuda.pass;

import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.PassConfig;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.device.HostRows;
import org.gpuvectors.cuda.device.PassSlot;
import org.gpuvectors.cuda.runtime.CudaException;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Runs a batch of searches, over one or many {@link DeviceIndex}es ({@code GpuFlatIndex}, {@code
 * GpuIvfFlatIndex}, {@code GpuIvfPqIndex}, {@code GpuGraphIndex}), as one GPU pass: every group's queries and accept
 * masks go to the device in one copy each, every group's kernels are enqueued without waiting (each index enqueues its
 * own from its group's {@link SearchParams} and {@link GroupAddresses}, {@link ResidentIndex#enqueue}; small graph
 * walks as one table launch, small groups spread over the device's lanes so that their chains of launches run side by
 * side), and all results come back in one copy per array. The host waits once per batch, not once per index: what makes
 * many segments cost about what one does. A small pass of a shape seen before runs as one launch of the CUDA graph
 * captured from it ({@link PassGraphs}): the host's launches had outlasted the GPU work of a query or a few.
 *
 * <p>Threading: takes the device lock while it enqueues the pass, in a slot of its own ({@link
 * GpuDevice#beginPass}), and waits for the device without it: up to {@link PassConfig#passesInFlight} passes are in flight
 * at once, each on its own streams.
 */
public final class BatchSearch {

  private BatchSearch() {}

  /** Per group, per query the group's k best (id, distance) pairs, best first; in group order. */
  public static SearchResult[] run(GpuDevice device, List<SearchGroup> groups) {
    return run(device, groups, new long[2]);
  }

  /**
   * As {@link #run(GpuDevice, List)}; adds to {@code timing[0]} the nanoseconds spent enqueuing the
   * pass on the host (from the device lock to the last launch) and to {@code timing[1]} those spent
   * waiting for the device and the downloads: which of host and GPU bounds a pass.
   */
  public static SearchResult[] run(GpuDevice device, List<SearchGroup> groups, long[] timing) {
    return run(device, groups, timing, true);
  }

  /**
   * The pass enqueued launch by launch even where a captured graph of its shape exists or would be captured: the
   * reference that tests hold a captured pass against.
   */
  static SearchResult[] runUncaptured(GpuDevice device, List<SearchGroup> groups) {
    return run(device, groups, new long[2], false);
  }

  private static SearchResult[] run(GpuDevice device, List<SearchGroup> groups, long[] timing, boolean capture) {
    int count = groups.size();
    PassLayout layout = new PassLayout(groups);
    long outElements = layout.outElements;
    float[] distances = new float[(int) outElements];
    int[] ids = new int[(int) outElements];
    Arrays.fill(ids, -1);
    // the packed queries and masks go up, the results come down, through the slot's pinned buffers and on its
    // stream when they fit them: then the pass waits for the device without the lock (see PassConfig.passesInFlight)
    PassGraphs.Key key = capture && PassGraphs.eligible(groups, layout) ? PassGraphs.key(groups, device.config().pass().lanes()) : null;
    PassSlot slot = null;
    boolean any;
    try {
      try (GpuDevice.Scope s = device.lock()) {
        long start = System.nanoTime();
        slot = device.beginPass();
        if (slot.overlapped()) {
          PassCounters.of(device).countOverlappedPass();
        }
        PassGraphs graphs = key == null ? null : PassGraphs.of(device);
        PassGraph graph = key == null ? null : graphs.take(key);
        if (graph != null) { // this pass's shape was captured: its inputs in, one graph launch, its outputs out
          slot.atEnd(() -> graphs.release(graph)); // idle again when the pass has ended
          System.arraycopy(graph.resultsAt, 0, layout.outAt, 0, count);
          stageInputs(device, slot, graph.input, layout);
          any = graph.launch(device, true);
          stageOutputs(device, slot, graph.output, outElements, any);
        } else {
          any = enqueuePass(device, slot, groups, layout, key, distances, ids);
        }
        device.endEnqueue(slot);
        timing[0] += System.nanoTime() - start;
      }
      long waitStart = System.nanoTime();
      device.awaitPass(slot);
      if (any && layout.staged) {
        ByteBuffer down = slot.download().bytes(8L * outElements);
        down.asFloatBuffer().get(0, distances);
        down.asIntBuffer().get((int) outElements, ids);
      }
      timing[1] += System.nanoTime() - waitStart;
    } finally {
      if (slot != null) {
        device.endPass(slot);
      }
    }
    searchRejectedAgain(groups, layout, distances, ids);
    SearchResult[] results = new SearchResult[count];
    for (int g = 0; g < count; g++) {
      SearchGroup group = groups.get(g);
      results[g] = new SearchResult(group.numQueries(), group.k(), ids, distances, (int) layout.outAt[g],
          layout.stride[g]); // a view
    }
    return results;
  }

  /**
   * The half-scanned groups' certificates (alone or in a half scan table; {@code GpuFlatIndex#uncertifiedHalf}, from
   * the stats the pass brought back with the results): each query without one is searched again alone by the FP32
   * scan and its results written over the pass's ({@link ResidentIndex#searchUncertifiedAgain}). Runs after the
   * pass, outside its slot (a search takes the device lock itself).
   */
  private static void searchRejectedAgain(List<SearchGroup> groups, PassLayout layout, float[] distances, int[] ids) {
    for (int g = 0; g < groups.size(); g++) {
      if (layout.statsAt[g] >= 0) {
        ResidentIndex.of(groups.get(g).index()).searchUncertifiedAgain(groups.get(g), distances, ids,
            (int) layout.statsAt[g], layout.outAt[g], layout.stride[g]);
      }
    }
  }

  /**
   * Enqueues a pass that no captured graph answers (caller holds the lock, inside {@code slot}): its input copy, its
   * kernels and its output copy. A pass of a shape seen before ({@code key}, see {@link PassGraphs}) is captured as
   * a graph, which then owns the pass's device blocks and is launched here and by later passes of its shape; a
   * pass that cannot be captured runs as usual. Sets the layout's {@code outAt} ({@link #placeResults}); returns
   * whether anything was enqueued. Unstaged passes download into {@code distances} and {@code ids} synchronously.
   */
  private static boolean enqueuePass(GpuDevice device, PassSlot slot, List<SearchGroup> groups, PassLayout layout,
                                     PassGraphs.Key key, float[] distances, int[] ids) {
    int count = groups.size();
    long outBytes = layout.outBytes();
    DeviceBuffer dq = device.allocate(layout.inputBytes());
    DeviceBuffer out = null;
    boolean captured = false; // dq and out then belong to the pass's graph
    try {
      out = device.allocate(2 * outBytes);
      DeviceBuffer dm = dq.slice(layout.masksAt, 8L * Math.max(1, layout.maskWords));
      DeviceBuffer outV = out.slice(0, outBytes);
      DeviceBuffer outI = out.slice(outBytes, outBytes);
      if (layout.staged) {
        stageInputs(device, slot, dq, layout);
      } else {
        if (layout.packed.length > 0) {
          device.upload(layout.packed, 0, layout.packed.length, dq, 0);
        }
        if (layout.masks.length > 0) {
          device.upload(layout.masks, dm);
        }
      }
      // the large groups' queries go up on the slot's copy stream, while the kernels of the blocks before run
      QueryUploads uploads = new QueryUploads(device, slot, 4L * layout.queryFloats - layout.directAt);
      QueryUploads.Feed[] feeds = new QueryUploads.Feed[count];
      for (int g = 0; g < count; g++) {
        if (layout.direct[g]) {
          feeds[g] = uploads.feed(groups.get(g), dq, 4L * layout.queryAt[g]);
        }
      }
      DeviceBuffer results = out;
      PassGraph.Enqueue kernels = () -> {
        try (SharedSelection shared = laneGroups(groups, layout.walked) >= 2
            ? planSharedSelection(device, groups, layout.walked) : null) {
          placeResults(groups, layout.stride, layout.outAt, shared, layout.flats);
          return enqueue(device, groups, layout, shared, dq, dm, outV, outI, feeds);
        }
      };
      PassGraph graph = null;
      if (key != null && PassGraphs.of(device).shouldCapture(key)) {
        try {
          graph = PassGraph.capture(device, key, dq, out, kernels, layout.outAt);
        } catch (CudaException e) { // e.g. a synchronous step inside the pass: its shape runs uncaptured
          PassGraphs.of(device).refuse(key);
        }
      }
      boolean any;
      if (graph != null) {
        PassGraphs graphs = PassGraphs.of(device);
        graphs.add(graph);
        PassGraph launched = graph;
        slot.atEnd(() -> graphs.release(launched)); // idle again when the pass has ended
        captured = true;
        any = graph.launch(device, false);
      } else {
        any = kernels.run();
      }
      uploads.finish();
      if (any && layout.staged) {
        stageOutputs(device, slot, results, layout.outElements, true);
      } else if (any) {
        device.download(results.slice(0, outBytes), 0, distances, 0, distances.length);
        device.download(results.slice(outBytes, outBytes), 0, ids, 0, ids.length);
      }
      return any;
    } finally { // the pass's blocks wait in its slot until it ends
      if (!captured) {
        if (out != null) {
          out.close();
        }
        dq.close();
      }
    }
  }

  /** The packed queries, norms and masks up in one copy, through the slot's pinned buffer, on the pass's stream. */
  private static void stageInputs(GpuDevice device, PassSlot slot, DeviceBuffer dq, PassLayout layout) {
    long[] masks = layout.masks;
    ByteBuffer up = slot.upload().bytes(layout.masksAt + 8L * masks.length);
    up.asFloatBuffer().put(0, layout.packed);
    up.asLongBuffer().put((int) (layout.masksAt / 8), masks);
    long upBytes = masks.length > 0 ? layout.masksAt + 8L * masks.length : 4L * layout.packed.length;
    if (upBytes > 0) {
      device.uploadAsync(slot.upload(), 0, dq, 0, upBytes); // queries, norms and masks in one copy
    }
  }

  /** The distances and ids down in one copy into the slot's pinned buffer, on the pass's stream (when any). */
  private static void stageOutputs(GpuDevice device, PassSlot slot, DeviceBuffer out, long outElements, boolean any) {
    if (any) {
      slot.download().bytes(8L * outElements);
      if (outElements > 0) { // distances and ids in one copy: the ids land 4 x outElements bytes in
        device.downloadAsync(out, 0, slot.download(), 0, 8L * outElements);
      }
    }
  }

  /**
   * Lays the pass's results out: the members of the shared {@code ivf_pq} selection first, one after another in
   * group order, then the members of the flat scan table likewise, then the other groups in their order ({@code
   * outAt[g]} becomes group g's first element; a group holds its queries x {@code stride[g]} elements). Each table
   * writes its members' rows with one selection, so they must be contiguous.
   */
  static void placeResults(List<SearchGroup> groups, int[] stride, long[] outAt, SharedSelection shared,
                           ScanTable flats) {
    long at = 0;
    for (int pass = 0; pass < 3; pass++) {
      for (int g = 0; g < groups.size(); g++) {
        boolean inShared = shared != null && shared.member(g);
        boolean inFlats = flats != null && flats.member(g);
        int place = inShared ? 0 : inFlats ? 1 : 2;
        if (place == pass) {
          outAt[g] = at;
          at += (long) groups.get(g).numQueries() * stride[g];
        }
      }
    }
  }

  /**
   * The first element of a table's results (a shared selection's or a scan table's, whose members' rows are one
   * merge's rows): member g (firstRow[g] >= 0) must start {@code firstRow[g] * stride} elements after the first
   * member, as {@link #placeResults} lays them out.
   */
  public static long membersOut(int[] firstRow, long[] outAt, int stride) {
    long out = -1;
    for (int g = 0; g < firstRow.length; g++) {
      if (firstRow[g] >= 0) {
        out = out < 0 ? outAt[g] : out;
        if (outAt[g] != out + (long) firstRow[g] * stride) {
          throw new IllegalStateException("the members' results are not laid out one after another (placeResults)");
        }
      }
    }
    return out;
  }

  /**
   * Enqueues every group's search (arguments: the pass's device buffers and each group's offsets in them); false
   * when nothing was enqueued. Graph walks in {@code walked} go to one table launch, small flat groups to one scan
   * table launch ({@code FlatScanTable}); the other groups are launched one by one, spread over the device's lanes
   * when they are all small ({@link #laneGroups}); small {@code ivf_pq} groups share one candidate selection
   * ({@code SharedKeySelection}).
   */
  private static boolean enqueue(GpuDevice device, List<SearchGroup> groups, PassLayout layout,
                                 SharedSelection shared, DeviceBuffer dq, DeviceBuffer dm, DeviceBuffer outV,
                                 DeviceBuffer outI, QueryUploads.Feed[] feeds) {
    boolean[] walked = layout.walked;
    ScanTable flats = layout.flats;
    int count = groups.size();
    GroupAddresses[] at = new GroupAddresses[count];
    for (int g = 0; g < count; g++) {
      at[g] = addresses(layout, g, dq, dm, outV, outI, feeds[g]);
    }
    // queries still to be copied: every search but a lone flat or ivf_pq group's takes all of them before its first
    // kernel (those ask block by block); the tables and the shared selection read several groups' at once
    for (int g = 0; g < count; g++) {
      boolean inTable = (flats != null && flats.member(g)) || (shared != null && shared.member(g));
      if (feeds[g] != null && (inTable || !ResidentIndex.of(groups.get(g).index()).readsQueriesBlockByBlock())) {
        feeds[g].awaitAll();
      }
    }
    // independent chains of launches: each group launched alone, the table walk, the flat scan table, each shared
    // member whose coarse step runs alone (the others' are in the shared chain on lane 0, after the lanes): lanes
    // only for two or more
    int lone = laneGroups(groups, walked);
    int alone = lone == 0 ? 0 : lone - (shared != null ? shared.membersInTable() : 0)
        - (flats != null ? flats.members() : 0);
    int chains = alone + (walked != null ? 1 : 0) + (flats != null ? 1 : 0);
    boolean any = false;
    int maxLanes = device.config().pass().lanes();
    try (GpuDevice.Lanes lanes = chains >= 2 && maxLanes >= 2 ? spread(device, Math.min(chains, maxLanes)) : null) {
      int chain = 0;
      if (flats != null) {
        long[] queries = new long[count];
        long[] accept = new long[count];
        for (int g = 0; g < count; g++) {
          queries[g] = at[g].queries();
          accept[g] = at[g].accept();
        }
        if (lanes != null) {
          lanes.use(chain++);
        }
        flats.enqueue(device, groups, queries, accept, layout.maskRowWords, outV, outI, layout.outAt, layout.statsAt);
        any = true;
      }
      if (walked != null) {
        if (lanes != null) {
          lanes.use(chain++);
        }
        walkTable(groups, walked).enqueue(device, groups, walked, at);
        any = true;
      }
      for (int g = 0; g < count; g++) {
        SearchGroup group = groups.get(g);
        if (group.numQueries() == 0 || group.index().size() == 0 || (walked != null && walked[g])
            || (flats != null && flats.member(g))) {
          continue; // nothing to search (the slots keep id -1), or walked or scanned in a table launch above
        }
        boolean member = shared != null && shared.member(g);
        if (lanes != null && !(member && shared.coarseInTable(g))) {
          lanes.use(chain++); // a chain of its own (a member in the coarse table launch enqueues nothing here)
        }
        if (member) { // prepared now; coarse step, scan, selection and re-rank below
          shared.enqueueProbes(g, group, at[g]);
        } else {
          ResidentIndex.of(group.index()).enqueue(group, at[g]);
        }
        any = true;
      }
    } // lane 0 now follows every lane's work: the members' coarse steps are done when their scan runs
    if (shared != null) { // one scan, selection and re-rank of every member's rows, on lane 0
      long[] queries = new long[count];
      for (int g = 0; g < count; g++) {
        queries[g] = at[g].queries();
      }
      shared.enqueueSelection();
      shared.enqueueRerank(queries, outV, outI, layout.outAt, groups);
    }
    return any;
  }

  /**
   * Group g's addresses in the pass's device buffers: its queries and norms in {@code dq}, its masks in {@code dm},
   * its results (and a half-scanned group's certificate inputs) in {@code outV} / {@code outI}.
   */
  private static GroupAddresses addresses(PassLayout layout, int g, DeviceBuffer dq, DeviceBuffer dm,
                                          DeviceBuffer outV, DeviceBuffer outI, QueryUploads.Feed feed) {
    long accept = layout.maskAt[g] < 0 ? 0 : dm.address() + 8L * layout.maskAt[g];
    long norms = layout.normsAt[g] < 0 ? 0 : dq.address() + 4L * layout.normsAt[g]; // 0: the index computes them
    return new GroupAddresses(dq.address() + 4L * layout.queryAt[g], norms, accept, layout.maskRowWords[g], outV,
        outI, layout.outAt[g], layout.statsAt[g], feed);
  }

  /** The device's lanes for a pass's chains ({@link GpuDevice#lanes}), counted as a lane pass when more than one. */
  private static GpuDevice.Lanes spread(GpuDevice device, int wanted) {
    GpuDevice.Lanes lanes = device.lanes(wanted);
    if (lanes.count() > 1) {
      PassCounters.of(device).countLanePass();
    }
    return lanes;
  }

  /**
   * The groups of a pass launched one by one (not walked in the table launch, not empty) when each of them is
   * small (at most {@link #LANE_GROUP_QUERIES} queries), else 0: their launch chains then run on the device's
   * lanes side by side. One query over several segments is a few short launches per segment, each filling a few
   * multiprocessors: in one stream the segments' chains would run one after another. Large groups fill the GPU
   * alone, and their temporaries (distance tiles) would stay out of the pool until the pass ends.
   */
  public static int laneGroups(List<SearchGroup> groups, boolean[] walked) {
    int alone = 0;
    for (int g = 0; g < groups.size(); g++) {
      SearchGroup group = groups.get(g);
      if (group.numQueries() == 0 || group.index().size() == 0 || (walked != null && walked[g])) {
        continue;
      }
      if (group.numQueries() > LANE_GROUP_QUERIES) {
        return 0;
      }
      alone++;
    }
    return alone;
  }

  /** The largest group whose launches go to a lane of their own ({@link #laneGroups}). */
  static final int LANE_GROUP_QUERIES = 64;

  /**
   * The graph walks of a pass that run as one launch ({@code GpuGraphIndex#enqueueWalkTable}), or null to launch each
   * group alone: a table launch when two or more groups walk a graph ({@link ResidentIndex#walks}: not an exact
   * search) and none of them fills the GPU by itself ({@code GpuGraphIndex#SMALL_BATCH} queries). That is a query
   * or a few over the segments of an index: one launch per segment would run them one after another, each on a few
   * multiprocessors. Large groups keep their own launches, planned for their own size.
   */
  public static boolean[] tableWalks(List<SearchGroup> groups) {
    boolean[] walked = new boolean[groups.size()];
    int walks = 0;
    for (int g = 0; g < groups.size(); g++) {
      SearchGroup group = groups.get(g);
      if (group.numQueries() > 0 && group.index().size() > 0
          && ResidentIndex.of(group.index()).walks(group.params())) {
        if (group.numQueries() >= ResidentIndex.of(group.index()).walkTable().groupQueries()) {
          return null;
        }
        walked[g] = true;
        walks++;
      }
    }
    return walks >= 2 ? walked : null;
  }

  /** The walk table of the walks in {@code walked} ({@link #tableWalks}): their index type's. */
  private static WalkTable walkTable(List<SearchGroup> groups, boolean[] walked) {
    for (int g = 0; g < groups.size(); g++) {
      if (walked[g]) {
        return ResidentIndex.of(groups.get(g).index()).walkTable();
      }
    }
    throw new IllegalStateException("no group walks");
  }

  /**
   * The selection the pass's groups share ({@link SharedSelection}), or null: planned by the first index type among
   * the groups' that shares selections; without one no group could share.
   */
  private static SharedSelection planSharedSelection(GpuDevice device, List<SearchGroup> groups, boolean[] walked) {
    for (SearchGroup group : groups) {
      SharedSelection.Planner planner = group.index() instanceof ResidentIndex r ? r.sharedSelections() : null;
      if (planner != null) {
        return planner.plan(device, groups, walked);
      }
    }
    return null;
  }

  /**
   * The scan table the pass's groups share ({@link ScanTable}), or null: planned by the first index type among the
   * groups' that has scan tables; without one no group could share.
   */
  static ScanTable planScanTable(List<SearchGroup> groups, boolean[] walked) {
    for (SearchGroup group : groups) {
      ScanTable.Planner planner = group.index() instanceof ResidentIndex r ? r.scanTables() : null;
      if (planner != null) {
        return planner.plan(groups, walked);
      }
    }
    return null;
  }

  /**
   * Groups of at least this many queries (not cosine) are uploaded from their own array or rows ({@link
   * QueryUploads}, block by block on the pass's copy stream) and their L2
   * norms computed on the device: packing and summing norms on the host costs ~2 us per 784-float
   * query (Fashion-MNIST batches of 10k: ~20 ms of a 58 ms pass), while a norm kernel per
   * group costs a launch, which only small groups (one query per segment, speculation) feel.
   */
  static final int DIRECT_UPLOAD_QUERIES = 64;

  /**
   * Copies a group's masks, and unless {@code queries} is null (a direct group) its queries (normalised
   * for cosine) and their norms, into the packed host arrays.
   */
  static void pack(SearchGroup group, float[] queries, int queryAt, int normsAt, long[] masks, int maskAt) {
    int dims = group.index().dims();
    if (queries != null) {
      group.copyQueries(0, group.numQueries(), queries, queryAt);
      if (ResidentIndex.takesNormalisedQueries(group.index())) {
        HostRows.normalize(queries, queryAt, group.numQueries(), dims);
      }
    }
    if (normsAt >= 0) {
      for (int q = 0; q < group.numQueries(); q++) {
        float s = 0; // in float, fused multiply-add, as the norm kernel sums (the same value up to rounding)
        for (int d = 0; d < dims; d++) {
          float x = queries[queryAt + q * dims + d];
          s = Math.fma(x, x, s);
        }
        queries[normsAt + q] = s;
      }
    }
    int words = SearchGroup.maskWords(group.index().size());
    if (group.sharedMask() != null) {
      System.arraycopy(group.sharedMask(), 0, masks, maskAt, words);
    } else if (group.queryMasks() != null) {
      for (int q = 0; q < group.numQueries(); q++) {
        long[] mask = group.queryMasks()[q];
        if (mask == null) {
          Arrays.fill(masks, maskAt + q * words, maskAt + (q + 1) * words, -1L);
        } else {
          System.arraycopy(mask, 0, masks, maskAt + q * words, words);
        }
      }
    }
  }
}
