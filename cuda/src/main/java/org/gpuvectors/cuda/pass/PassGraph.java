package org.gpuvectors.cuda.pass;

import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.runtime.CudaException;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.Driver;
import java.util.ArrayDeque;
import jcuda.driver.CUgraph;
import jcuda.driver.CUgraphExec;
import jcuda.driver.CUstreamCaptureMode;
import jcuda.driver.JCudaDriver;

/**
 * The kernels of one search pass, captured once as a CUDA graph ({@code cuStreamBeginCapture} ... {@code
 * cuStreamEndCapture}, then {@code cuGraphInstantiate}) and launched again by {@link BatchSearch} for every later
 * pass of the same shape ({@link PassGraphs.Key}): one {@code cuGraphLaunch} instead of the pass's chain of
 * launches, memsets and lane events. A query over a large {@code ivf_pq} segment is about seven launches whose
 * enqueue (~85 us of host time) outlasts their GPU work (~30 us): the host's launches, not the GPU, bounded a lone
 * query.
 *
 * <p>A graph bakes in every address its kernels read and write: so it owns them. The pass's input block (packed
 * queries, norms, masks) and output block (distances, ids) are its own, and the temporaries the pass allocated and
 * returned while it was captured (selection rows, candidates, tables) stay lent to it instead of going back to the
 * pool. A pass that launches it copies its queries into {@link #input}, launches it, and copies {@link #output}
 * back: the indexes' own buffers are read in place, so the graph dies with the first of its indexes to close
 * ({@link PassGraphs#evict}). One pass at a time uses a graph ({@link #busy}): the next pass's copies would
 * overwrite the inputs and outputs of a launch still running.
 *
 * <p>Owned by its device's {@link PassGraphs}, used and closed under the device lock.
 */
public final class PassGraph {
  final PassGraphs.Key key;
  final DeviceBuffer input;
  final DeviceBuffer output;
  /** Where each group's results lie in {@link #output} ({@link BatchSearch#placeResults}), as the pass laid them. */
  long[] resultsAt;
  private final CUgraphExec exec = new CUgraphExec();
  /** (address, size class) of the temporaries returned while the pass was captured: lent to this graph. */
  private final ArrayDeque<long[]> temporaries = new ArrayDeque<>();
  private long[] counts; // the device's pass counters that the captured pass moved ({@link GpuDevice#passCounters})
  private boolean enqueued; // whether the captured pass enqueued anything (BatchSearch's "any")
  private long bytes;
  boolean busy; // a pass in flight launched it (under the device lock)
  boolean evicted; // closed when its pass ends
  long lastUsed; // PassGraphs' clock at its last launch

  private PassGraph(PassGraphs.Key key, DeviceBuffer input, DeviceBuffer output) {
    this.key = key;
    this.input = input;
    this.output = output;
  }

  /** What a pass enqueues between its input copy and its output copy (its kernels); true when it enqueued any. */
  interface Enqueue {
    boolean run();
  }

  /**
   * Captures {@code pass} on the device's current stream (the pass slot's first lane, whose work its other lanes
   * join) into a graph that owns {@code input}, {@code output} and the temporaries the pass returns, and
   * instantiates it; nothing runs on the device yet ({@link #launch}). Throws {@link CudaException} when the pass
   * cannot be captured (a synchronous copy inside it, a launch that streams do not capture): the device's counters
   * are then as before, {@code input} and {@code output} still the caller's, and the temporaries back in the pass's
   * hands. {@code resultsAt} is what the pass sets its groups' result offsets in. Caller holds the lock inside a
   * pass slot.
   */
  static PassGraph capture(GpuDevice device, PassGraphs.Key key, DeviceBuffer input, DeviceBuffer output,
                           Enqueue pass, long[] resultsAt) {
    PassGraph g = new PassGraph(key, input, output);
    long[] before = PassCounters.of(device).passCounts();
    CUgraph graph = new CUgraph();
    boolean began = false;
    boolean instantiated = false;
    ArrayDeque<long[]> passReturns = device.returnBlocksTo(g.temporaries);
    try {
      Driver.check("cuStreamBeginCapture",
          JCudaDriver.cuStreamBeginCapture(device.stream(), CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED));
      began = true;
      boolean ended = false;
      try {
        g.enqueued = pass.run();
        ended = true;
        Driver.check("cuStreamEndCapture", JCudaDriver.cuStreamEndCapture(device.stream(), graph));
      } finally {
        if (!ended) { // leave capture mode; what was captured is not used
          CUgraph abandoned = new CUgraph();
          JCudaDriver.cuStreamEndCapture(device.stream(), abandoned);
          if (Driver.address(abandoned) != 0) {
            JCudaDriver.cuGraphDestroy(abandoned);
          }
        }
      }
      Driver.check("cuGraphInstantiate", JCudaDriver.cuGraphInstantiate(g.exec, graph, 0));
      instantiated = true;
    } finally {
      device.returnBlocksTo(passReturns);
      if (began && Driver.address(graph) != 0) {
        JCudaDriver.cuGraphDestroy(graph); // the executable graph keeps what it needs
      }
      if (!instantiated) {
        PassCounters.of(device).restorePassCounts(before); // the pass runs again, uncaptured, and counts itself then
        device.releaseBlocks(g.temporaries); // into the pass's returned blocks: nothing of the capture ran
      }
    }
    g.resultsAt = resultsAt.clone();
    long[] after = PassCounters.of(device).passCounts();
    g.counts = new long[after.length];
    for (int i = 0; i < after.length; i++) {
      g.counts[i] = after[i] - before[i];
    }
    g.bytes = input.capacity() + output.capacity();
    for (long[] block : g.temporaries) {
      g.bytes += block[1];
    }
    return g;
  }

  /**
   * Enqueues the captured pass on the device's current stream, after the copy into {@link #input} and before the
   * copy out of {@link #output}; with {@code count}, counts what the captured pass counted (its capture counted the
   * pass that launches it first). Caller holds the lock inside a pass slot.
   */
  boolean launch(GpuDevice device, boolean count) {
    Driver.check("cuGraphLaunch", JCudaDriver.cuGraphLaunch(exec, device.stream()));
    if (count) {
      PassCounters.of(device).addPassCounts(counts);
    }
    return enqueued;
  }

  /** Device bytes the graph holds: its input and output blocks and its temporaries. */
  long bytes() {
    return bytes;
  }

  /** Destroys the executable graph and returns its blocks; caller holds the lock, no pass uses the graph. */
  void close(GpuDevice device) {
    try {
      Driver.check("cuGraphExecDestroy", JCudaDriver.cuGraphExecDestroy(exec));
    } finally {
      input.close();
      output.close();
      device.releaseBlocks(temporaries);
    }
  }
}
