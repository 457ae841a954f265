package org.gpuvectors.cuda.device;

import org.gpuvectors.cuda.GpuAvailability;
import org.gpuvectors.cuda.GpuConfig;
import org.gpuvectors.cuda.PassConfig;
import org.gpuvectors.cuda.runtime.Cublas;
import org.gpuvectors.cuda.runtime.CudaException;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.DeviceMemoryPool;
import org.gpuvectors.cuda.runtime.Driver;
import org.gpuvectors.cuda.runtime.KernelModule;
import org.gpuvectors.cuda.runtime.Lane;
import org.gpuvectors.cuda.runtime.PinnedHostBuffer;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;

/**
 * One CUDA device: its primary context, its streams ({@link Lane}s: lane 0 for everything by default, a few
 * more for the small groups of a pass, {@link #lanes}), each with its cuBLAS handle (created on first use),
 * the kernel module and a device-memory pool. Every native resource here is created and destroyed by this
 * class; {@link #close()} releases them in reverse order.
 *
 * <p>Threading rule: all GPU work on a device runs under its lock. Callers wrap enqueue + sync in
 * {@code try (GpuDevice.Scope s = device.lock()) { ... }}; the scope makes the context current on
 * the calling thread. The lock is reentrant, so library methods ({@code GpuFlatIndex}, {@code
 * KSelect}) take it themselves and may be called from any thread; work from two threads is
 * serialised, never interleaved.
 */
public final class GpuDevice implements AutoCloseable {
  private final GpuAvailability.DeviceInfo info;
  private final CUdevice device = new CUdevice();
  private final CUcontext context = new CUcontext();
  /** Lane 0 is created with the device; the others on the first pass that spreads groups over lanes. */
  private final Lane[] lanes;
  private Lane current; // where enqueued work goes: lane 0 outside a Lanes pass
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition slotFreed = lock.newCondition();
  /** The slots of the passes that may be in flight at once, created on first use ({@link #beginPass}). */
  private final PassSlot[] slots;
  private final boolean cooperativeLaunch;
  private PassSlot enqueuing; // the slot whose pass holds the lock and enqueues, or null
  /** Blocks returned while a {@link Lanes} pass outside a slot runs (address, size class): reused after it. */
  private final ArrayDeque<long[]> returnedInLanes = new ArrayDeque<>();
  private final DeviceMemoryPool pool;
  private final KernelModule module;
  private final PinnedHostBuffer staging = new PinnedHostBuffer(); // query rows on their way to the device
  private final PinnedHostBuffer stagingBack = new PinnedHostBuffer(); // the other half of a double-buffered upload
  private final GpuConfig config;
  /** The device-scoped objects of the packages above ({@link #attachment}), in order of creation. */
  private final Map<Class<?>, Attachment> attachments = new ConcurrentHashMap<>();
  private final List<Attachment> attachmentOrder = new CopyOnWriteArrayList<>();
  private boolean closed;
  private long heldBlockReclaims; // see heldBlockReclaims(); under the lock

  /**
   * The device whose context each thread made current last: {@link #lock()} sets the context only when another
   * device (or none) did, since a cuCtxSetCurrent per lock showed as ~13 % of a search pass's host samples
   * (Elasticsearch, 16 clients, 8 segments). Only this class makes contexts current.
   */
  private static final ThreadLocal<GpuDevice> CONTEXT_OF_THREAD = new ThreadLocal<>();

  private GpuDevice(int ordinal, GpuConfig config) {
    this.config = java.util.Objects.requireNonNull(config, "config");
    this.lanes = new Lane[config.pass().lanes()];
    this.slots = new PassSlot[config.pass().passesInFlight()];
    GpuAvailability a = GpuAvailability.get();
    if (!a.available()) {
      throw new IllegalStateException("GPU not usable: " + a.reason());
    }
    this.info = a.devices().stream().filter(d -> d.ordinal() == ordinal).findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no usable CUDA device " + ordinal + ": " + a.reason()));
    Driver.check("cuDeviceGet", JCudaDriver.cuDeviceGet(device, ordinal));
    this.cooperativeLaunch = Driver.attribute(device,
        jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH) != 0;
    Driver.check("cuDevicePrimaryCtxRetain", JCudaDriver.cuDevicePrimaryCtxRetain(context, device));
    boolean ok = false;
    DeviceMemoryPool p = null;
    KernelModule m = null;
    try {
      Driver.check("cuCtxSetCurrent", JCudaDriver.cuCtxSetCurrent(context));
      CONTEXT_OF_THREAD.set(this);
      lanes[0] = new Lane();
      current = lanes[0];
      p = new DeviceMemoryPool();
      m = new KernelModule(config.kernelFile());
      ok = true;
    } finally {
      if (!ok) {
        if (p != null) {
          p.close();
        }
        if (lanes[0] != null) {
          lanes[0].close();
        }
        JCudaDriver.cuDevicePrimaryCtxRelease(device);
      }
    }
    this.pool = p;
    this.module = m;
  }

  /** Opens device {@code ordinal} with the default configuration ({@link #open(int, GpuConfig)}). */
  public static GpuDevice open(int ordinal) {
    return open(ordinal, GpuConfig.defaults());
  }

  /**
   * Opens device {@code ordinal}, searching as {@code config} says; throws IllegalStateException with the reason
   * when the GPU is unusable.
   */
  public static GpuDevice open(int ordinal, GpuConfig config) {
    return new GpuDevice(ordinal, config);
  }

  /** How this device searches (fixed when it was opened). */
  public GpuConfig config() {
    return config;
  }

  /** Holds the device lock with the context current on this thread. */
  public final class Scope implements AutoCloseable {
    private boolean released;

    private Scope() {}

    @Override
    public void close() {
      if (!released) {
        released = true;
        lock.unlock();
      }
    }
  }

  /** Takes the device lock (reentrant) and makes the context current; close the scope to release. */
  public Scope lock() {
    lock.lock();
    try {
      ensureOpen();
      if (lock.getHoldCount() > 1) {
        return new Scope(); // re-entered: the context is already current on this thread
      }
      if (CONTEXT_OF_THREAD.get() != this) {
        Driver.check("cuCtxSetCurrent", JCudaDriver.cuCtxSetCurrent(context));
        CONTEXT_OF_THREAD.set(this);
      }
    } catch (RuntimeException e) {
      lock.unlock();
      throw e;
    }
    return new Scope();
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("GPU device closed");
    }
  }

  /** Whether {@link #close()} ran. */
  public boolean isClosed() {
    lock.lock();
    try {
      return closed;
    } finally {
      lock.unlock();
    }
  }

  /** Throws unless this thread holds the device lock and the device is open. */
  public void checkLocked() {
    if (!lock.isHeldByCurrentThread()) {
      throw new IllegalStateException("GPU device used without holding its lock (GpuDevice.lock())");
    }
    ensureOpen();
  }

  public String name() {
    return info.name();
  }

  public int ordinal() {
    return info.ordinal();
  }

  /** major * 10 + minor, e.g. 90 for compute capability 9.0. */
  public int computeCapability() {
    return info.computeCapability();
  }

  public int multiprocessorCount() {
    return info.multiprocessors();
  }

  /** Whether the device takes cooperative launches (every block of a grid resident at once): sm_60 and later. */
  public boolean cooperativeLaunch() {
    return cooperativeLaunch;
  }

  public long totalMemoryBytes() {
    return info.totalMemoryBytes();
  }

  /** Device bytes lent out by the pool (size classes of live buffers). */
  public long bytesInUse() {
    try (Scope s = lock()) {
      return pool.bytesInUse();
    }
  }

  /** Device bytes held by the pool for reuse. */
  public long bytesCached() {
    try (Scope s = lock()) {
      return pool.bytesCached();
    }
  }

  /**
   * How many times an allocation ran out of memory and tried again after the blocks a pass held back went back early
   * ({@link #allocate}).
   */
  public long heldBlockReclaims() {
    try (Scope s = lock()) {
      return heldBlockReclaims;
    }
  }

  /**
   * Allocates device memory from the pool; caller must hold the lock. When the device runs out of memory while the
   * pass being enqueued holds returned blocks back from reuse (a pass slot's, or a {@link Lanes} pass's outside a
   * slot), the device waits for what that pass enqueued so far, lets those blocks go back to the pool and tries once
   * more, as PyTorch's caching allocator does: a pass that loops over many blocks of queries, each with its
   * temporaries, would otherwise take fresh memory for each until the device is full. Then it throws the driver's
   * out-of-memory error.
   */
  public DeviceBuffer allocate(long bytes) {
    checkLocked();
    try {
      return pool.allocate(bytes);
    } catch (CudaException e) {
      if (e.code() != CUresult.CUDA_ERROR_OUT_OF_MEMORY || !releaseHeldBlocks()) {
        throw e;
      }
    }
    heldBlockReclaims++;
    return pool.allocate(bytes); // the pool frees its cache, the blocks just returned among them, if it must
  }

  /**
   * Waits for the streams that may still read the blocks the pass being enqueued holds back, then returns those
   * blocks to the pool; the blocks it returns later are held back as before. False when it holds none back.
   *
   * <p>Waiting for the enqueuing pass's own streams is enough: a block in its sink was returned by a buffer closed
   * while this pass was enqueued (under the lock: no other pass enqueues meanwhile), so the only work that may still
   * read it is this pass's, on its lanes and copy stream, or work enqueued before the pass on lane 0, which the
   * slot's first lane follows ({@link #beginPass}). Other passes in flight return their blocks to their own slots'
   * sinks; {@link #endPass} relies on the same when it returns a sink after its own pass's end alone. Outside a slot,
   * a {@link Lanes} pass's blocks were read by the device's lanes. A captured pass ({@code PassGraph}) holds its
   * temporaries in a sink of its own, which is not this pass's to give back (the graph bakes in their addresses),
   * and its stream cannot be waited for while it is captured: no blocks go back then.
   */
  private boolean releaseHeldBlocks() {
    ArrayDeque<long[]> held = enqueuing != null ? enqueuing.returned() : returnedInLanes;
    if (held.isEmpty() || !pool.returnsTo(held)) {
      return false;
    }
    Lane[] readers = enqueuing != null ? enqueuing.lanes() : lanes;
    for (Lane lane : readers) {
      if (lane != null) {
        lane.synchronize();
      }
    }
    if (enqueuing != null && enqueuing.copiesIfMade() != null) {
      enqueuing.copiesIfMade().synchronize();
    }
    pool.releaseHeld(held);
    return true;
  }

  /**
   * Copies {@code count} rows of {@code dims} floats to the device (synchronous) through the pinned staging buffer, at
   * most {@code bytesPerCopy} a copy: from {@code flat} (row-major) when not null, else from {@code rowArrays}, each
   * row copied once on the host ({@link HostRows#stage}). Pinned memory goes to the device by DMA at the bus's
   * speed, several times the driver's pageable path. Copies of several slabs are double
   * buffered: the host stages the next slab into one pinned buffer while the device copies the last from the other
   * rather than staging and copying one after the other.
   */
  private void uploadThroughStaging(float[] flat, float[][] rowArrays, int count, int dims, DeviceBuffer dst,
                                    long dstByteOffset, long bytesPerCopy) {
    int rowsPerCopy = (int) Math.max(1, Math.min(bytesPerCopy, PinnedHostBuffer.MAX_BYTES) / (4L * dims));
    if (count <= rowsPerCopy) {
      for (int from = 0; from < count; from += rowsPerCopy) {
        int rows = Math.min(rowsPerCopy, count - from);
        long bytes = 4L * rows * dims;
        HostRows.stage(flat, rowArrays, dims, from, rows, staging.floats(bytes), 0);
        // synchronous from pinned memory: the buffer may be refilled when this returns
        Driver.check("cuMemcpyHtoD", JCudaDriver.cuMemcpyHtoD(
            Driver.deviceptr(dst.address() + dstByteOffset + 4L * from * dims), staging.pointer(), bytes));
      }
      return;
    }
    PinnedHostBuffer[] buffers = {staging, stagingBack};
    CUevent[] copied = {new CUevent(), new CUevent()};
    Driver.check("cuEventCreate", JCudaDriver.cuEventCreate(copied[0], CUevent_flags.CU_EVENT_DISABLE_TIMING));
    try {
      Driver.check("cuEventCreate", JCudaDriver.cuEventCreate(copied[1], CUevent_flags.CU_EVENT_DISABLE_TIMING));
      try {
        try {
          copySlabsDoubleBuffered(flat, rowArrays, count, dims, rowsPerCopy, dst, dstByteOffset, buffers, copied);
        } catch (RuntimeException | Error e) {
          // copies already queued still read the pinned buffers and write dst: let them end before either is reused
          JCudaDriver.cuStreamSynchronize(stream());
          throw e;
        }
        Driver.check("cuStreamSynchronize", JCudaDriver.cuStreamSynchronize(stream())); // synchronous, as the others
      } finally {
        JCudaDriver.cuEventDestroy(copied[1]);
      }
    } finally {
      JCudaDriver.cuEventDestroy(copied[0]);
    }
  }

  /**
   * The slabs' copies of {@link #uploadThroughStaging}'s double-buffered path: slab s staged in buffer s &amp; 1 once
   * that buffer's last copy (recorded in its event) is done, then copied on the stream.
   */
  private void copySlabsDoubleBuffered(float[] flat, float[][] rowArrays, int count, int dims, int rowsPerCopy,
                                       DeviceBuffer dst, long dstByteOffset, PinnedHostBuffer[] buffers,
                                       CUevent[] copied) {
    for (int from = 0, slab = 0; from < count; from += rowsPerCopy, slab++) {
      int b = slab & 1;
      if (slab >= 2) {
        Driver.check("cuEventSynchronize", JCudaDriver.cuEventSynchronize(copied[b])); // its last copy is done
      }
      int rows = Math.min(rowsPerCopy, count - from);
      long bytes = 4L * rows * dims;
      HostRows.stage(flat, rowArrays, dims, from, rows, buffers[b].floats(bytes), 0);
      long at = dst.address() + dstByteOffset + 4L * from * dims;
      Driver.check("cuMemcpyHtoDAsync",
          JCudaDriver.cuMemcpyHtoDAsync(Driver.deviceptr(at), buffers[b].pointer(), bytes, stream()));
      Driver.check("cuEventRecord", JCudaDriver.cuEventRecord(copied[b], stream()));
    }
  }

  /** Copies host floats to device (synchronous). */
  public void upload(float[] src, int srcOffset, int count, DeviceBuffer dst, long dstByteOffset) {
    checkLocked();
    check(dst, dstByteOffset, 4L * count);
    Driver.check("cuMemcpyHtoD", JCudaDriver.cuMemcpyHtoD(Driver.deviceptr(dst.address() + dstByteOffset),
        Pointer.to(src).withByteOffset(4L * srcOffset), 4L * count));
  }

  /**
   * Copies the first {@code rows} rows of {@code dims} floats of {@code src} (row-major) to the device (synchronous),
   * through the pinned staging buffer: index and k-means uploads of hundreds of MB.
   */
  public void uploadStaged(float[] src, int rows, int dims, DeviceBuffer dst, long dstByteOffset) {
    checkLocked();
    check(dst, dstByteOffset, 4L * rows * dims);
    uploadThroughStaging(src, null, rows, dims, dst, dstByteOffset, PinnedHostBuffer.MAX_BYTES);
  }

  /**
   * Copies rows {@code [0, count)} of {@code rows} ({@code dims} floats each) to the device, row-major (synchronous),
   * through the pinned staging buffer: each row is copied once on the host, into pinned memory, side by side on the
   * common pool for large copies.
   */
  public void uploadRows(float[][] rows, int count, int dims, DeviceBuffer dst, long dstByteOffset) {
    uploadRows(rows, count, dims, dst, dstByteOffset, PinnedHostBuffer.MAX_BYTES);
  }

  /** As {@link #uploadRows(float[][], int, int, DeviceBuffer, long)}, at most {@code bytesPerCopy} a copy. */
  public void uploadRows(float[][] rows, int count, int dims, DeviceBuffer dst, long dstByteOffset, long bytesPerCopy) {
    checkLocked();
    check(dst, dstByteOffset, 4L * count * dims);
    for (int r = 0; r < count; r++) {
      if (rows[r].length != dims) {
        throw new IllegalArgumentException("row " + r + " has " + rows[r].length + " floats, not " + dims);
      }
    }
    uploadThroughStaging(null, rows, count, dims, dst, dstByteOffset, bytesPerCopy);
  }

  public void upload(int[] src, DeviceBuffer dst) {
    checkLocked();
    check(dst, 0, 4L * src.length);
    Driver.check("cuMemcpyHtoD", JCudaDriver.cuMemcpyHtoD(Driver.deviceptr(dst.address()), Pointer.to(src), 4L * src.length));
  }

  public void upload(long[] src, DeviceBuffer dst) {
    checkLocked();
    check(dst, 0, 8L * src.length);
    Driver.check("cuMemcpyHtoD", JCudaDriver.cuMemcpyHtoD(Driver.deviceptr(dst.address()), Pointer.to(src), 8L * src.length));
  }

  /** Copies host bytes to device (synchronous). */
  public void upload(byte[] src, int srcOffset, int count, DeviceBuffer dst, long dstByteOffset) {
    checkLocked();
    check(dst, dstByteOffset, count);
    Driver.check("cuMemcpyHtoD", JCudaDriver.cuMemcpyHtoD(Driver.deviceptr(dst.address() + dstByteOffset),
        Pointer.to(src).withByteOffset(srcOffset), count));
  }

  /** Copies device floats to host (synchronous; waits for the stream's work). */
  public void download(DeviceBuffer src, long srcByteOffset, float[] dst, int dstOffset, int count) {
    checkLocked();
    check(src, srcByteOffset, 4L * count);
    Driver.check("cuMemcpyDtoH", JCudaDriver.cuMemcpyDtoH(Pointer.to(dst).withByteOffset(4L * dstOffset),
        Driver.deviceptr(src.address() + srcByteOffset), 4L * count));
  }

  /**
   * As {@link #download(DeviceBuffer, long, int[], int, int)}, through the pinned staging buffer ({@link
   * PinnedHostBuffer#MAX_BYTES} at a time): a large result (a PQ encoding's codes, tens of MB) comes back at the
   * bus's speed rather than the driver's pageable copy's.
   */
  public void downloadStaged(DeviceBuffer src, long srcByteOffset, int[] dst, int dstOffset, int count) {
    checkLocked();
    check(src, srcByteOffset, 4L * count);
    int perCopy = (int) (PinnedHostBuffer.MAX_BYTES / 4);
    for (int done = 0; done < count; done += perCopy) {
      int n = Math.min(perCopy, count - done);
      java.nio.ByteBuffer bytes = staging.bytes(4L * n);
      Driver.check("cuMemcpyDtoH", JCudaDriver.cuMemcpyDtoH(staging.pointer(),
          Driver.deviceptr(src.address() + srcByteOffset + 4L * done), 4L * n));
      bytes.asIntBuffer().get(0, dst, dstOffset + done, n);
    }
  }

  public void download(DeviceBuffer src, long srcByteOffset, int[] dst, int dstOffset, int count) {
    checkLocked();
    check(src, srcByteOffset, 4L * count);
    Driver.check("cuMemcpyDtoH", JCudaDriver.cuMemcpyDtoH(Pointer.to(dst).withByteOffset(4L * dstOffset),
        Driver.deviceptr(src.address() + srcByteOffset), 4L * count));
  }

  /** Device-to-device copy on the stream (used by the bandwidth benchmark). */
  public void copy(DeviceBuffer src, DeviceBuffer dst, long bytes) {
    checkLocked();
    check(src, 0, bytes);
    check(dst, 0, bytes);
    Driver.check("cuMemcpyDtoDAsync", JCudaDriver.cuMemcpyDtoDAsync(Driver.deviceptr(dst.address()),
        Driver.deviceptr(src.address()), bytes, stream()));
  }

  /** Sets every 4-byte word of {@code dst} to {@code word} (a float's or an int's bits), on the stream (asynchronous). */
  public void fill32(DeviceBuffer dst, int word) {
    checkLocked();
    Driver.check("cuMemsetD32Async", JCudaDriver.cuMemsetD32Async(Driver.deviceptr(dst.address()), word, dst.bytes() / 4,
        stream()));
  }

  /** Sets every byte of {@code dst} to zero, on the stream (asynchronous). */
  public void clear(DeviceBuffer dst) {
    checkLocked();
    Driver.check("cuMemsetD8Async", JCudaDriver.cuMemsetD8Async(Driver.deviceptr(dst.address()), (byte) 0, dst.bytes(),
        stream()));
  }

  /** Copies {@code bytes} from a pinned buffer to the device on the current stream (asynchronous). */
  public void uploadAsync(PinnedHostBuffer src, long srcByteOffset, DeviceBuffer dst, long dstByteOffset, long bytes) {
    checkLocked();
    check(dst, dstByteOffset, bytes);
    Driver.check("cuMemcpyHtoDAsync", JCudaDriver.cuMemcpyHtoDAsync(Driver.deviceptr(dst.address() + dstByteOffset),
        src.pointer().withByteOffset(srcByteOffset), bytes, stream()));
  }

  /** Copies {@code bytes} from the device to a pinned buffer on the current stream (asynchronous). */
  public void downloadAsync(DeviceBuffer src, long srcByteOffset, PinnedHostBuffer dst, long dstByteOffset, long bytes) {
    checkLocked();
    check(src, srcByteOffset, bytes);
    Driver.check("cuMemcpyDtoHAsync", JCudaDriver.cuMemcpyDtoHAsync(dst.pointer().withByteOffset(dstByteOffset),
        Driver.deviceptr(src.address() + srcByteOffset), bytes, stream()));
  }

  private static void check(DeviceBuffer b, long offset, long bytes) {
    if (offset < 0 || bytes < 0 || offset + bytes > b.bytes()) {
      throw new IndexOutOfBoundsException("device buffer of " + b.bytes() + " bytes, access [" + offset + ", "
          + (offset + bytes) + ")");
    }
  }

  /** Waits for all work queued on the device's streams. */
  public void synchronize() {
    checkLocked();
    for (Lane lane : lanes) {
      if (lane != null) {
        lane.synchronize();
      }
    }
    for (PassSlot slot : slots) {
      for (int i = 0; slot != null && i < slot.lanes().length; i++) {
        if (slot.lanes()[i] != null) {
          slot.lanes()[i].synchronize();
        }
      }
    }
  }

  /** Times {@code work} with CUDA events on the stream; returns milliseconds. Caller holds the lock. */
  public float time(Runnable work) {
    checkLocked();
    jcuda.driver.CUevent start = new jcuda.driver.CUevent();
    jcuda.driver.CUevent stop = new jcuda.driver.CUevent();
    Driver.check("cuEventCreate", JCudaDriver.cuEventCreate(start, 0));
    try {
      Driver.check("cuEventCreate", JCudaDriver.cuEventCreate(stop, 0));
      try {
        Driver.check("cuEventRecord", JCudaDriver.cuEventRecord(start, stream()));
        work.run();
        Driver.check("cuEventRecord", JCudaDriver.cuEventRecord(stop, stream()));
        Driver.check("cuEventSynchronize", JCudaDriver.cuEventSynchronize(stop));
        float[] ms = new float[1];
        Driver.check("cuEventElapsedTime", JCudaDriver.cuEventElapsedTime(ms, start, stop));
        return ms[0];
      } finally {
        JCudaDriver.cuEventDestroy(stop);
      }
    } finally {
      JCudaDriver.cuEventDestroy(start);
    }
  }

  /** The stream enqueued work goes to: lane 0, or the lane a {@link Lanes} pass selected. */
  public CUstream stream() {
    return current.stream();
  }

  /** The lane of {@link #stream()}; caller holds the lock. */
  public Lane currentLane() {
    checkLocked();
    return current;
  }

  public KernelModule module() {
    return module;
  }

  /** The cuBLAS handle of the current lane ({@link #stream()}), created on first use; caller holds the lock. */
  public Cublas.Handle cublas() {
    checkLocked();
    return current.cublas();
  }

  /**
   * Spreads the groups of one pass over up to {@code wanted} lanes (at most the configured {@link PassConfig#lanes}); caller holds the lock.
   * Inside a pass slot ({@link #beginPass}) they are the slot's lanes, else the device's. The lanes start after
   * everything enqueued so far on the first of them (an index uploaded just before the pass), and {@link
   * Lanes#close()} orders the first one's later work after all of theirs. Device buffers closed during the pass
   * return to the pool only at the end of the slot's pass, or outside a slot when the lanes close, so that no lane
   * reuses a block that another lane may still be reading.
   */
  public Lanes lanes(int wanted) {
    checkLocked();
    Lane[] base = enqueuing != null ? enqueuing.lanes() : lanes;
    int count = Math.max(1, Math.min(wanted, lanes.length));
    for (int i = 1; i < count; i++) {
      if (base[i] == null) {
        base[i] = new Lane();
      }
      base[i].waitFor(base[0]);
    }
    boolean defers = enqueuing == null; // a slot keeps its pass's blocks until the pass ends anyway
    if (defers) {
      pool.deferTo(returnedInLanes);
    }
    return new Lanes(base, count, defers);
  }

  /**
   * Starts or stops the profiler's range (cuProfilerStart / cuProfilerStop): a profiler run with {@code
   * --profile-from-start off} (Nsight Compute, Nsight Systems) records only the kernels launched inside it, e.g. a
   * benchmark's searches without the index build before them.
   */
  public void profilerRange(boolean on) {
    try (Scope s = lock()) {
      Driver.check(on ? "cuProfilerStart" : "cuProfilerStop", on ? JCudaDriver.cuProfilerStart() : JCudaDriver.cuProfilerStop());
    }
  }

  /** How many search passes may be in flight at once ({@link PassConfig#passesInFlight}). */
  public int concurrentPasses() {
    return slots.length;
  }

  /**
   * A device-scoped object of a package above the device (the captured search passes, the counters of what the
   * searches did): what the device holds for them without knowing them. Made on first use, held as long as the
   * device, and closed by {@link #close()} (under the lock, after the passes in flight and before the device's own
   * resources, in reverse order of creation).
   */
  public interface Attachment extends AutoCloseable {
    @Override
    default void close() {}
  }

  /**
   * This device's attachment of {@code type}, made by {@code create} on first use (once, also when threads race;
   * {@code create} must not ask for another attachment). Any thread, with or without the lock.
   */
  public <T extends Attachment> T attachment(Class<T> type, Function<GpuDevice, T> create) {
    Attachment a = attachments.get(type);
    if (a == null) {
      a = attachments.computeIfAbsent(type, t -> {
        T made = create.apply(this);
        attachmentOrder.add(made);
        return made;
      });
    }
    return type.cast(a);
  }

  /**
   * Device blocks returned from now on wait in {@code sink} instead of the pool (a pass slot's returned blocks, a
   * {@code PassGraph}'s temporaries; null: straight back to the pool); returns the sink before. Caller holds the lock.
   */
  public ArrayDeque<long[]> returnBlocksTo(ArrayDeque<long[]> sink) {
    checkLocked();
    return pool.deferTo(sink);
  }

  /** Returns the blocks in {@code blocks} (address, size class) as {@link DeviceBuffer#close} would; under the lock. */
  public void releaseBlocks(ArrayDeque<long[]> blocks) {
    checkLocked();
    pool.releaseAll(blocks);
  }

  /** Stops holding returned blocks back and returns those a {@link Lanes} pass outside a slot held back. */
  private void releaseReturnedInLanes() {
    pool.deferTo(null);
    pool.releaseAll(returnedInLanes);
  }

  /** A pass over several lanes ({@link #lanes(int)}); close it (under the lock) before the pass's downloads. */
  public final class Lanes implements AutoCloseable {
    private final Lane[] base;
    private final int count;
    private final boolean defers;
    private boolean closed;

    private Lanes(Lane[] base, int count, boolean defers) {
      this.base = base;
      this.count = count;
      this.defers = defers;
    }

    /** The lanes of this pass. */
    public int count() {
      return count;
    }

    /** Sends the work enqueued from now on to lane {@code i % count()}. */
    public void use(int i) {
      checkLocked();
      current = base[Math.floorMod(i, count)];
    }

    @Override
    public void close() {
      if (closed) {
        return;
      }
      closed = true;
      current = base[0];
      try {
        for (int i = 1; i < count; i++) {
          base[0].waitFor(base[i]);
        }
      } finally {
        if (defers) {
          releaseReturnedInLanes(); // reused from now on in lane 0's order, which follows every lane of the pass
        }
      }
    }
  }

  /**
   * Starts a search pass in a slot of its own (caller holds the lock; waits, without it, while {@link
   * PassConfig#passesInFlight} passes are in flight): until {@link #endEnqueue}, work goes to the slot's first lane, which starts after
   * everything enqueued on lane 0 so far (an index uploaded just before), and device blocks returned stay out of
   * the pool until {@link #endPass}. Then: {@link #endEnqueue} under the lock, {@link #awaitPass} without it,
   * {@link #endPass}.
   */
  public PassSlot beginPass() {
    checkLocked();
    if (enqueuing != null) {
      throw new IllegalStateException("a pass is already being enqueued on this device");
    }
    PassSlot slot = null;
    while (slot == null) {
      ensureOpen();
      for (int i = 0; i < slots.length && slot == null; i++) {
        if (slots[i] == null) {
          slots[i] = new PassSlot(lanes.length);
        }
        if (!slots[i].busy()) {
          slot = slots[i];
        }
      }
      if (slot == null) {
        slotFreed.awaitUninterruptibly(); // releases the lock; a pass in flight returns its slot under it
      }
    }
    boolean overlapped = false;
    for (PassSlot other : slots) {
      if (other != null && other.busy()) {
        overlapped = true;
        break;
      }
    }
    slot.begin(overlapped);
    slot.lanes()[0].waitFor(lanes[0]);
    current = slot.lanes()[0];
    enqueuing = slot;
    pool.deferTo(slot.returned());
    return slot;
  }

  /**
   * Ends the enqueuing of the slot's pass (caller holds the lock): marks its end on its stream (after its
   * downloads), and sends later work back to lane 0 and returned blocks back to the pool.
   */
  public void endEnqueue(PassSlot slot) {
    checkLocked();
    if (enqueuing != slot) {
      throw new IllegalStateException("not the pass being enqueued");
    }
    stopEnqueuing();
    Driver.check("cuEventRecord", JCudaDriver.cuEventRecord(slot.finished(), slot.lanes()[0].stream()));
  }

  /** No pass is being enqueued any more: later work goes to lane 0, returned blocks straight back to the pool. */
  private void stopEnqueuing() {
    enqueuing = null;
    current = lanes[0];
    pool.deferTo(null);
  }

  /**
   * Waits for the end of the slot's pass, without the lock: other passes are enqueued meanwhile. The context is
   * current on this thread (it held the lock for {@link #beginPass}).
   */
  public void awaitPass(PassSlot slot) {
    Driver.check("cuEventSynchronize", JCudaDriver.cuEventSynchronize(slot.finished()));
  }

  /** Returns the slot and the blocks of its pass (ended, or failed) to the device; takes the lock. */
  public void endPass(PassSlot slot) {
    lock.lock();
    try {
      if (enqueuing == slot) { // failed while enqueuing: let what it enqueued end before its blocks are lent again
        stopEnqueuing();
        for (Lane lane : slot.lanes()) {
          if (lane != null) {
            JCudaDriver.cuStreamSynchronize(lane.stream()); // best effort: the failure is what the caller reports
          }
        }
        if (slot.copiesIfMade() != null) { // its copies read the slot's pinned buffer
          JCudaDriver.cuStreamSynchronize(slot.copiesIfMade().stream());
        }
      }
      slot.runAtEnd(); // a captured pass it launched is idle again: the pass has ended
      pool.releaseAll(slot.returned());
      slot.end();
      slotFreed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void close() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      Driver.check("cuCtxSetCurrent", JCudaDriver.cuCtxSetCurrent(context));
      CONTEXT_OF_THREAD.set(this);
      while (Arrays.stream(slots).anyMatch(slot -> slot != null && slot.busy())) {
        slotFreed.awaitUninterruptibly(); // a pass in flight: its thread returns the slot (and its blocks) first
      }
      try {
        try {
          try {
            closeAttachments(); // before the pool: the captured passes' blocks go back to it
          } finally {
            try {
              staging.close();
            } finally {
              stagingBack.close();
            }
          }
          for (PassSlot slot : slots) {
            if (slot != null) {
              slot.close();
            }
          }
        } finally {
          for (int i = lanes.length - 1; i >= 0; i--) { // each waits for its own work first
            if (lanes[i] != null) {
              lanes[i].close();
            }
          }
        }
      } finally {
        try {
          module.close();
        } finally {
          try {
            releaseReturnedInLanes(); // a Lanes pass left open: its blocks are freed with the pool's
            pool.close();
          } finally {
            closed = true;
            JCudaDriver.cuDevicePrimaryCtxRelease(device);
          }
        }
      }
    } finally {
      lock.unlock();
    }
  }

  /** Closes the attachments, the last made first; each is closed even when one before it throws. */
  private void closeAttachments() {
    RuntimeException failed = null;
    for (int i = attachmentOrder.size() - 1; i >= 0; i--) {
      try {
        attachmentOrder.get(i).close();
      } catch (RuntimeException e) {
        if (failed == null) {
          failed = e;
        } else {
          failed.addSuppressed(e);
        }
      }
    }
    if (failed != null) {
      throw failed;
    }
  }

  @Override
  public String toString() {
    return "GpuDevice[" + info.ordinal() + ": " + info.name() + ", cc " + info.computeCapability() + "]";
  }
}
