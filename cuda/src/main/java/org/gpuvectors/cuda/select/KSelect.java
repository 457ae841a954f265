package org.gpuvectors.cuda.select;

import org.gpuvectors.cuda.SelectConfig;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.KernelModule;
import jcuda.Pointer;

/**
 * k-selection on the GPU over the rows of a row-major float matrix: per row, the k smallest (or
 * largest) values and their ids, best first; NaN never selected; fewer than k when the row has
 * fewer candidates (empty slots: id -1).
 *
 * <ul>
 *   <li>{@link #runWarpSelect}, {@link #runBlockSelect}, {@link #runTangSelect}: one kernel launch,
 *       exactly as the {@link SelectParams} say.
 *   <li>{@link #select(GpuDevice, Algorithm, SelectParams)}: the whole selection, with a
 *       hierarchical partition when there are too few rows to fill the GPU (rows cut into chunks,
 *       each chunk selects k, then the chunks' k-lists are merged by further passes).
 * </ul>
 *
 * <p>k is rounded up to a compile-time bucket (32, 64, ..., 2048). Threading: every method takes
 * the device lock; launches are asynchronous on the device stream unless stated.
 */
public final class KSelect {
  public static final int MAX_K = 2048;
  /**
   * Hierarchical partition targets: (row, chunk) pairs per SM for WarpSelect (warps) and BlockSelect
   * (blocks). WarpSelect 8: with the cp.async scan, 8 warps per SM keep the loads in flight, and fewer
   * chunks mean fewer inserts and a smaller merge pass than at 16.
   */
  static final int WARP_ROWS_PER_SM = 8;
  static final int BLOCK_ROWS_PER_SM = 2;
  /**
   * BlockSelect (and Tang) target of {@link #select} for k <= 32: a short queue leaves a block's loads the bottleneck,
   * and more blocks per SM keep more of them in flight (measured better at 4 than 2; at larger k, 2).
   */
  static final int BLOCK_ROWS_PER_SM_SELECT = 4;

  /** The k-selection algorithms. */
  public enum Algorithm {
    /** Faiss WarpSelect: one warp per row (chunk). */
    WARP_SELECT,
    /** Faiss BlockSelect: one block per row (chunk), warp queues merged in shared memory. */
    BLOCK_SELECT,
    /** Tang et al.: buffered search into a shared-memory merge queue, one block per row (chunk). */
    TANG
  }

  private KSelect() {}

  /** The compile-time k bucket for k: the next power of two, at least 32. */
  public static int bucket(int k) {
    if (k < 1 || k > MAX_K) {
      throw new IllegalArgumentException("k must be in [1, " + MAX_K + "]: " + k);
    }
    int b = 32;
    while (b < k) {
      b <<= 1;
    }
    return b;
  }

  public static int blockSelectThreads(int k) {
    return bucket(k) == 2048 ? 64 : 128;
  }

  /** Kernel names per k bucket (index log2(bucket / 32)), made once: launches run per segment and pass. */
  private static final String[] WARP_SELECT_KERNELS = names("gv_warp_select_k");
  private static final String[] BLOCK_SELECT_KERNELS = names("gv_block_select_k");
  private static final String[] TANG_SELECT_KERNELS = names("gv_tang_select_k");

  /** Kernel names {@code prefix + bucket} for the buckets 32..2048, indexed as {@link #kernel} reads them. */
  public static String[] names(String prefix) {
    String[] names = new String[7];
    for (int i = 0; i < names.length; i++) {
      names[i] = prefix + (32 << i);
    }
    return names;
  }

  public static String kernel(String[] names, int k) {
    return names[Integer.numberOfTrailingZeros(bucket(k) >>> 5)];
  }

  public static void runWarpSelect(GpuDevice device, SelectParams p) {
    launch(device, p, WARP_SELECT_KERNELS, 128, true);
  }

  public static void runBlockSelect(GpuDevice device, SelectParams p) {
    launch(device, p, BLOCK_SELECT_KERNELS, blockSelectThreads(p.k), false);
  }

  public static void runTangSelect(GpuDevice device, SelectParams p) {
    launch(device, p, TANG_SELECT_KERNELS, 256, false);
  }

  public static void run(GpuDevice device, Algorithm a, SelectParams p) {
    switch (a) {
      case WARP_SELECT -> runWarpSelect(device, p);
      case BLOCK_SELECT -> runBlockSelect(device, p);
      case TANG -> runTangSelect(device, p);
    }
  }

  private static void launch(GpuDevice device, SelectParams p, String[] names, int threads, boolean warpPerRow) {
    if (p.chunkLen == 0 && p.chunksPerRow == 1) {
      p.chunkLen = p.len;
    }
    p.validate();
    long vrows = (long) p.rows * p.chunksPerRow;
    if (vrows == 0) {
      return;
    }
    long grid = warpPerRow ? (vrows + threads / 32 - 1) / (threads / 32) : vrows;
    if (grid > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("too many rows: " + vrows);
    }
    try (GpuDevice.Scope s = device.lock()) {
      device.module().launch(kernel(names, p.k), (int) grid, 1, threads, 0, device.stream(), Pointer.to(p.encode()));
    }
  }

  /**
   * The whole selection described by {@code p} (input, epilogue, k, output; its chunking is
   * replaced). Temporary buffers come from the device pool. Asynchronous.
   */
  public static void select(GpuDevice device, Algorithm algorithm, SelectParams p) {
    try (GpuDevice.Scope s = device.lock()) {
      selectLevel(device, algorithm, p.copy());
    }
  }

  private static void selectLevel(GpuDevice device, Algorithm algorithm, SelectParams p) {
    int chunks = selectChunks(device, algorithm, p.rows, p.len, p.k);
    if (chunks <= 1) {
      p.chunks(1, p.len);
      run(device, algorithm, p);
      return;
    }
    // chunk starts stay 16-byte aligned (multiples of 4 floats) for the kernels' float4 loads
    int chunkLen = (int) (((p.len + (long) chunks - 1) / chunks + 3) / 4 * 4);
    chunks = (int) ((p.len + (long) chunkLen - 1) / chunkLen);
    long width = (long) chunks * p.k;
    try (DeviceBuffer tmpV = device.allocate(4L * p.rows * width);
         DeviceBuffer tmpI = device.allocate(4L * p.rows * width)) {
      SelectParams first = p.copy().chunks(chunks, chunkLen).output(tmpV, tmpI, width);
      run(device, algorithm, first);
      SelectParams merge = new SelectParams().input(tmpV, p.rows, (int) width, width).inputIds(tmpI).k(p.k)
          .scales(p.outScale, p.outScale);
      merge.outK = p.outK;
      merge.outIdx = p.outIdx;
      merge.outRowStride = p.outRowStride;
      // buffers return to the pool now: reuse is ordered on the same stream
      selectLevel(device, algorithm == Algorithm.WARP_SELECT ? Algorithm.BLOCK_SELECT : algorithm, merge);
    }
  }

  /**
   * The k smallest values of each row (at most {@code p.rowLens}' count of its columns when given), sorted, by
   * radix selection (select_kernels.cu): for a large k over rows of a few thousand to a few hundred thousand
   * values, where the sorted queues of WarpSelect and BlockSelect cost most. Each row is split over {@link
   * #radixBlocksPerRow} blocks and each pass is one launch over every row's blocks: the range ({@code
   * gv_radix_range}), up to three digits ({@code gv_radix_digit}, a pass whose row is resolved returns at once)
   * and the gather and sort ({@code gv_radix_gather}); or all of them in one cooperative launch ({@link
   * #RADIX_FUSED_KERNEL}: four launches fewer) when the device takes cooperative launches and the grid fits on it at
   * once, the separate launches being the fallback otherwise. A zeroed {@link #RADIX_ROW_BYTES} per row carries a
   * row's state from pass to pass. Rows of at most {@link SelectConfig#radixBlockMaxLen} values are selected by one
   * block each instead, the row in shared memory ({@link #RADIX_BLOCK_KERNEL}). Reads the
   * input, its ids and inScale; norms, accept masks, clamping and chunks are refused. Asynchronous.
   */
  public static void radixSelect(GpuDevice device, SelectParams p) {
    if (p.rows == 0) {
      radixSelect(device, p, null); // checks the arguments, launches nothing
      return;
    }
    try (GpuDevice.Scope s = device.lock();
         DeviceBuffer rows = device.allocate(radixStateBytes(p.rows))) {
      device.clear(rows);
      radixSelect(device, p, rows);
      // rows returns to the pool now: reuse is ordered on the same stream
    }
  }

  /** Bytes of the rows' state that {@link #radixSelect(GpuDevice, SelectParams, DeviceBuffer)} takes. */
  public static long radixStateBytes(int rows) {
    return RADIX_ROW_BYTES * rows;
  }

  /**
   * As {@link #radixSelect(GpuDevice, SelectParams)}, with the rows' state ({@link #radixStateBytes}, zeroed on the
   * stream before this call) from the caller: one that zeroes other counters anyway clears both in one memset.
   */
  public static void radixSelect(GpuDevice device, SelectParams p, DeviceBuffer zeroedState) {
    if (p.colNorms != 0 || p.rowNorms != 0 || p.acceptBits != 0 || p.clampZero || p.chunksPerRow != 1) {
      throw new IllegalArgumentException("radix selection reads values and ids only: no norms, masks, clamp, chunks");
    }
    p.chunkLen = p.len;
    p.validate();
    if (p.rows == 0) {
      return;
    }
    int perRow = radixBlocksPerRow(p.rows, p.len, device.multiprocessorCount());
    long grid = (long) p.rows * perRow;
    if (grid > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("radix selection of " + p.rows + " rows: past a launch's grid");
    }
    if (zeroedState.bytes() < radixStateBytes(p.rows)) {
      throw new IllegalArgumentException("radix state of " + zeroedState.bytes() + " bytes for " + p.rows + " rows");
    }
    try (GpuDevice.Scope s = device.lock()) {
      if (radixBlock(device, p)) {
        return; // the state is not read (its caller zeroed it anyway, with counters of its own)
      }
      Pointer params = Pointer.to(p.encode());
      Pointer state = Pointer.to(new long[] {zeroedState.address()});
      Pointer blocks = Pointer.to(new int[] {perRow});
      KernelModule module = device.module();
      if (device.cooperativeLaunch()
          && grid <= (long) module.maxBlocksPerSm(RADIX_FUSED_KERNEL, RADIX_THREADS) * device.multiprocessorCount()) {
        module.launchCooperative(RADIX_FUSED_KERNEL, (int) grid, RADIX_THREADS, device.stream(), params, state, blocks);
        counts(device).fusedRadix++;
        return;
      }
      // the fallback: no cooperative launch, or more blocks than the device holds at once
      module.launch("gv_radix_range", (int) grid, 1, RADIX_THREADS, 0, device.stream(), params, state, blocks);
      for (int digit = 0; digit < RADIX_DIGIT_PASSES; digit++) {
        module.launch("gv_radix_digit", (int) grid, 1, RADIX_THREADS, 0, device.stream(), params, state, blocks);
      }
      module.launch("gv_radix_gather", (int) grid, 1, RADIX_THREADS, 0, device.stream(), params, state, blocks);
    }
  }

  /**
   * The radix selection of rows of at most {@link SelectConfig#radixBlockMaxLen} values, one block a row with the row
   * in shared memory ({@link #RADIX_BLOCK_KERNEL}): false, with nothing launched, for longer rows or a row past the
   * kernel's shared memory (or past {@link SelectConfig#radixBlockMaxSharedKeys}). Rows whose typical length ({@link
   * SelectParams#typicalLen}) is that short take it too when their capacity ({@code len}) is not: the block's shared
   * memory then holds as many keys as it can (at least the typical row's), and a longer row reads the rest from
   * global memory on each of its passes. An IVF-PQ query's keys fill a
   * row of about nprobe x the mean list, in a row sized for the nprobe largest lists (at 10M x 128, nprobe 8: ~25k
   * keys in a row of 81k). Caller holds the lock.
   */
  private static boolean radixBlock(GpuDevice device, SelectParams p) {
    SelectConfig config = device.config().select();
    int typical = p.typicalLen > 0 ? Math.min(p.typicalLen, p.len) : p.len;
    if (typical > config.radixBlockMaxLen()) {
      return false;
    }
    KernelModule module = device.module();
    long most = module.maxDynamicSharedBytes(RADIX_BLOCK_KERNEL) / 4;
    if (config.radixBlockMaxSharedKeys() > 0) {
      most = Math.min(most, config.radixBlockMaxSharedKeys());
    }
    int held = (int) Math.min(Math.max(1, p.len), most);
    if (held < typical) {
      return false;
    }
    int shared = 4 * held;
    module.allowDynamicShared(RADIX_BLOCK_KERNEL, shared);
    module.launch(RADIX_BLOCK_KERNEL, p.rows, 1, RADIX_BLOCK_THREADS, shared, device.stream(), Pointer.to(p.encode()));
    counts(device).radixBlock++;
    return true;
  }

  /**
   * The radix selection of a short row in one block, the row in shared memory (select_kernels.cu): the passes of
   * {@link #RADIX_FUSED_KERNEL} meet in global memory, a fixed cost of tens of microseconds a selection whatever the
   * row's length.
   */
  static final String RADIX_BLOCK_KERNEL = "gv_radix_block";
  /** Threads of {@link #RADIX_BLOCK_KERNEL}'s block (select_kernels.cu's kRadixBlockThreads). */
  static final int RADIX_BLOCK_THREADS = 1024;

  /** The radix selection's passes in one cooperative launch (select_kernels.cu). */
  static final String RADIX_FUSED_KERNEL = "gv_radix_fused";

  /**
   * The radix selections a device ran by each path since it opened ({@link #counts}; tests: the path
   * they meant to check), counted when enqueued, under the device's lock: a captured pass's later launches add none.
   */
  static final class Counts implements GpuDevice.Attachment {
    /** Selections by the one-block kernel ({@link #RADIX_BLOCK_KERNEL}), merges included. */
    long radixBlock;
    /** Selections whose passes ran as one cooperative launch ({@link #RADIX_FUSED_KERNEL}). */
    long fusedRadix;
    /** Merges ({@link #mergeCandidates}) by the one-block kernel. */
    long radixMerges;
  }

  /** The radix selections {@code device} ran by each path since it opened. */
  static Counts counts(GpuDevice device) {
    return device.attachment(Counts.class, d -> new Counts());
  }

  /**
   * Blocks a row of {@code len} values is split over: one per {@link #RADIX_VALUES_PER_BLOCK} values, as long as
   * the launch holds at most about two blocks per multiprocessor (then fewer, at least one a row): a query's row
   * of tens of thousands of keys spread over the GPU instead of one multiprocessor, a batch's rows a block each.
   */
  public static int radixBlocksPerRow(int rows, long len, int multiprocessors) {
    long byLength = (len + RADIX_VALUES_PER_BLOCK - 1) / RADIX_VALUES_PER_BLOCK;
    long byDevice = 2L * multiprocessors / rows;
    return (int) Math.max(1, Math.min(byLength, byDevice));
  }

  /** Threads of a radix-selection block (select_kernels.cu's kRadixThreads). */
  public static final int RADIX_THREADS = 512;
  /** Values one radix-selection block reads per pass: one step of kRadixUnroll (8) loads per thread. */
  public static final int RADIX_VALUES_PER_BLOCK = RADIX_THREADS * 8;
  /** Digit passes of 12 bits that resolve a 32-bit key: select_kernels.cu's kRadixDigitBits. */
  public static final int RADIX_DIGIT_PASSES = 3;
  /** Bytes of a row's state between the passes: select_kernels.cu's {@code sizeof(RadixRow)}. */
  public static final long RADIX_ROW_BYTES = 32_832;

  /**
   * Candidate lists up to this many values per row are merged by one BlockSelect block per row, in
   * one launch: a small segment's few queries otherwise pay two more partitioned merge levels
   * (launches and temporaries) for a few thousand values.
   */
  static final int SINGLE_LAUNCH_MERGE = 16384;

  /**
   * Rows of candidate lists from this many values are merged by the one-block radix selection ({@link
   * #RADIX_BLOCK_KERNEL}) rather than by one BlockSelect block, when the rows fit one wave ({@link #mergeCandidates}).
   * One BlockSelect block's sorted queues cost more the longer the row: from a few thousand values the radix block
   * took a fraction of its time (about 0.6x at 2,000 values and k 80, 0.3x at 8,000 and k 160), and such a merge
   * (the FP16 scan's 261 chunks of 32 candidates) was a third to a half of a one-query pass.
   */
  static final int RADIX_MERGE_MIN_LEN = 1024;

  /**
   * Merges per-row candidate lists (values with their ids, {@link SelectParams#inputIds}) into the k
   * best per row, as {@code merge} says: rows of {@link #RADIX_MERGE_MIN_LEN} to {@link SelectConfig#radixBlockMaxLen}
   * values, no more rows than multiprocessors (the radix block takes a whole one), by the one-block radix selection;
   * where that does not apply (other rows, or a row past the kernel's shared memory), rows up to {@link
   * #SINGLE_LAUNCH_MERGE} values in one BlockSelect launch, longer ones by {@link #select}. Both
   * select the same sets (which of several values equal to the k-th: either), best first. Asynchronous.
   */
  public static void mergeCandidates(GpuDevice device, SelectParams merge) {
    if (merge.len >= RADIX_MERGE_MIN_LEN && merge.rows <= device.multiprocessorCount()
        && merge.colNorms == 0 && merge.rowNorms == 0 && merge.acceptBits == 0 && !merge.clampZero
        && merge.chunksPerRow == 1) {
      merge.chunkLen = merge.len;
      merge.validate();
      if (merge.rows == 0) {
        return;
      }
      try (GpuDevice.Scope s = device.lock()) {
        if (radixBlock(device, merge)) {
          counts(device).radixMerges++;
          return;
        }
      }
    }
    if (merge.len <= SINGLE_LAUNCH_MERGE) {
      runBlockSelect(device, merge.chunks(1, merge.len));
    } else {
      select(device, Algorithm.BLOCK_SELECT, merge);
    }
  }

  /**
   * Chunks per row so that rows * chunks comes nearest to filling the GPU (rounded: a row count just
   * past half the target runs unchunked rather than paying a merge pass), each chunk at least
   * max(1024, 8 * bucket).
   * WarpSelect aims at one wave: at most as many warps per SM as can be resident (occupancy API; a
   * second, partial wave costs nearly a whole wave's time).
   */
  public static int chunksFor(GpuDevice device, Algorithm algorithm, int rows, int len, int k) {
    return chunksFor(device, algorithm, rows, len, k, BLOCK_ROWS_PER_SM);
  }

  /**
   * The partition of {@link #select}: as {@link #chunksFor}, but BlockSelect and Tang aim at
   * BLOCK_ROWS_PER_SM_SELECT blocks per SM for k <= 32 (at larger k the extra blocks' merge cost as much as they
   * saved).
   */
  static int selectChunks(GpuDevice device, Algorithm algorithm, int rows, int len, int k) {
    int blockTarget = bucket(k) == 32 ? BLOCK_ROWS_PER_SM_SELECT : BLOCK_ROWS_PER_SM;
    return chunksFor(device, algorithm, rows, len, k, blockTarget);
  }

  private static int chunksFor(GpuDevice device, Algorithm algorithm, int rows, int len, int k, int blockRowsPerSm) {
    int sms = device.multiprocessorCount();
    long target = algorithm == Algorithm.WARP_SELECT ? (long) Math.min(WARP_ROWS_PER_SM, residentWarps(device, k)) * sms
        : (long) blockRowsPerSm * sms;
    if (rows >= target) {
      return 1;
    }
    long minChunk = Math.max(1024, 8L * bucket(k));
    long byLen = len / minChunk;
    long want = (target + rows / 2) / rows;
    return (int) Math.max(1, Math.min(want, byLen));
  }

  /** Whether {@code rows} WarpSelect warps (one per row) fill the GPU's WarpSelect target without chunking. */
  public static boolean warpsFillGpu(GpuDevice device, int rows, int k) {
    return rows >= (long) Math.min(WARP_ROWS_PER_SM, residentWarps(device, k)) * device.multiprocessorCount();
  }

  /** WarpSelect warps that fit on one SM at once for k's bucket (occupancy API; call under the device lock). */
  static int residentWarps(GpuDevice device, int k) {
    return Math.max(1, device.module().maxBlocksPerSm(kernel(WARP_SELECT_KERNELS, k), 128) * 4);
  }

  /** Host-to-host convenience (tests, benchmarks): uploads, selects, downloads. Synchronous. */
  public static Result select(GpuDevice device, Algorithm algorithm, float[] data, int rows, int len, int k,
                              boolean largest) {
    if ((long) rows * len > data.length) {
      throw new IllegalArgumentException("data shorter than rows * len");
    }
    try (GpuDevice.Scope s = device.lock();
         DeviceBuffer in = device.allocate(4L * rows * len);
         DeviceBuffer outV = device.allocate(4L * rows * k);
         DeviceBuffer outI = device.allocate(4L * rows * k)) {
      device.upload(data, 0, rows * len, in, 0);
      select(device, algorithm, new SelectParams().input(in, rows, len, len).k(k).largest(largest).output(outV, outI, k));
      float[] v = new float[rows * k];
      int[] ids = new int[rows * k];
      device.download(outV, 0, v, 0, v.length);
      device.download(outI, 0, ids, 0, ids.length);
      return new Result(rows, k, v, ids);
    }
  }

  /** Per row k values and ids, best first; id -1 marks an empty slot (fewer candidates than k). */
  public record Result(int rows, int k, float[] values, int[] ids) {}
}
