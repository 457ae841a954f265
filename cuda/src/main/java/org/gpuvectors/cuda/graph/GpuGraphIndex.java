package org.gpuvectors.cuda.graph;

import org.gpuvectors.cuda.DeviceBytes;
import org.gpuvectors.cuda.GraphConfig;
import org.gpuvectors.cuda.MemoryPart;
import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.ivf.IvfSearch;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.GroupAddresses;
import org.gpuvectors.cuda.pass.ResidentIndex;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.pass.WalkTable;
import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.KernelModule;
import org.gpuvectors.cuda.select.SelectParams;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import jcuda.Pointer;

/**
 * Graph-index (CAGRA-style) approximate k-NN over vectors resident in GPU memory: a fixed-degree proximity graph
 * over the vectors (built by the codec: k-NN graph, rank-based pruning, reverse links) and a few entry points
 * (seeds), searched by a best-first beam search, one thread block per query ({@code gv_graph_search},
 * graph_search.cu). Metrics as {@link GpuFlatIndex}: squared L2, inner product, cosine (the inner product of
 * vectors normalised at upload and queries normalised per search).
 *
 * <p>A search of width M (= max(search width, k)) keeps the M best visited nodes in a sorted list, expands the best
 * not-yet-expanded ones ({@link GraphConfig#parents} per iteration) until every node of the list is expanded (or after
 * {@link SearchPlan#maxIterations} iterations), and returns the list's k best. With an accept mask, every node is
 * traversed but only accepted ones are returned: the kernel keeps a second list of the k best accepted nodes.
 *
 * <p>A search with {@link SearchParams#EXACT} is exact instead: the flat search ({@link GpuFlatIndex}) of the accepted
 * vectors, for filters so selective that a walk would score more vectors than they hold (the codec's filter rule).
 *
 * <p>Device memory, owned here and returned by {@link #close()}: the vectors as a {@link GpuFlatIndex} (cosine:
 * normalised; L2: with their norms), which the walk reads and the exact search searches (one upload, one owner),
 * the adjacency ({@code n x degree} ints) and the seeds. A walk allocates nothing past its results: all its state
 * lives in the block's shared memory. Threading as {@link GpuFlatIndex}: every method takes the device lock; many
 * queries over many indexes run as one pass through {@link BatchSearch}, where a group's {@link SearchParams.Graph}
 * holds the search width.
 */
public final class GpuGraphIndex extends ResidentIndex {
  /** The largest search width (internal list size). */
  public static final int MAX_WIDTH = 2048;
  /** The largest out-degree. */
  public static final int MAX_DEGREE = 1024;
  /**
   * Batches from this many queries are planned as throughput-bound ({@link GraphConfig#threads}: 128 threads a block
   * from here, {@link #SMALL_BATCH_THREADS} below).
   */
  public static final int SMALL_BATCH = 1024;
  static final int SMALL_BATCH_THREADS = 256;
  /**
   * Batches below this many queries are latency-bound: fewer blocks than a large GPU's multiprocessors, so each
   * query can have a wide block ({@link #LATENCY_BATCH_THREADS}) and expand several parents per iteration. A query's
   * latency is about iterations x the cost of one iteration, and p parents cut the iterations about p-fold (the
   * reference search, GraphWalkUnderFilterTest's data, widths 32 / 64: 33 / 65 iterations at p = 1, 17 / 33 at 2, 9.5 /
   * 17 at 4) for 2-8 % more distances at the same recall; an iteration costs its barriers plus its distance rounds,
   * p x degree / teams, which a wide block keeps at the p = 1 count of a 256-thread block.
   */
  public static final int LATENCY_BATCH = 128;
  static final int LATENCY_BATCH_THREADS = 1024;
  /**
   * Parents per iteration of a latency-bound batch at list width {@code width}: width / 8, within 4..16. Wider lists
   * leave more unexpanded nodes worth expanding at once: at one query and 1,024 threads, widths 32 / 64 / 128 were
   * fastest at 8 / 8-16 / 16 parents, each faster than at 4.
   */
  static int latencyParents(int width) {
    return Math.max(4, Math.min(16, width / 8));
  }
  /**
   * Smallest visited set (a Bloom filter, graph_search.cu), in 32-bit words, a power of two: a larger one is cleared
   * less often (each clear lets evicted nodes be computed again).
   */
  static final int VISITED_MIN_WORDS = 2048;

  private final int degree;
  private final int numSeeds;
  private final GpuFlatIndex vectors; // n x dims (cosine: normalised): the walk reads them, the exact search too
  private final DeviceBuffer graph; // n x degree
  private final DeviceBuffer seeds;

  private GpuGraphIndex(GpuDevice device, int n, int dims, Metric metric, int degree, int numSeeds,
                        GpuFlatIndex vectors, DeviceBuffer graph, DeviceBuffer seeds) {
    super(device, n, dims, metric);
    this.degree = degree;
    this.numSeeds = numSeeds;
    this.vectors = vectors;
    this.graph = graph;
    this.seeds = seeds;
  }

  /** Uploads {@code n} row-major vectors of {@code dims} floats with their graph; see the RowSource variant. */
  public static GpuGraphIndex upload(GpuDevice device, float[] vectorsRowMajor, int n, int dims, Metric metric,
                                     int[] adjacency, int degree, int[] seeds) {
    if (n < 0 || dims < 1 || (long) n * dims > vectorsRowMajor.length) {
      throw new IllegalArgumentException("need n * dims floats: n=" + n + " dims=" + dims + " length="
          + vectorsRowMajor.length);
    }
    try {
      return upload(device, n, dims, metric,
          (first, count, dst) -> System.arraycopy(vectorsRowMajor, first * dims, dst, 0, count * dims),
          adjacency, degree, seeds);
    } catch (IOException e) {
      throw new AssertionError("copying from an array does no I/O", e);
    }
  }

  /**
   * Uploads {@code n} vectors of {@code dims} floats read from {@code source} in slabs of a few MB (cosine:
   * normalised on the way), the adjacency {@code int[n * degree]} (row i: the out-neighbours of ordinal i, -1 =
   * none) and the entry points {@code seeds} (ordinals; at least one when n > 0).
   */
  public static GpuGraphIndex upload(GpuDevice device, int n, int dims, Metric metric, GpuFlatIndex.RowSource source,
                                     int[] adjacency, int degree, int[] seeds) throws IOException {
    Objects.requireNonNull(metric, "metric");
    Objects.requireNonNull(source, "source");
    validateGraph(n, adjacency, degree, seeds);
    GpuFlatIndex v = GpuFlatIndex.upload(device, n, dims, metric, source);
    DeviceBuffer g = null;
    DeviceBuffer s = null;
    boolean ok = false;
    try (GpuDevice.Scope scope = device.lock()) {
      int rows = n * degree; // validated: adjacency holds at least this many
      g = IvfSearch.uploadInts(device, adjacency.length == rows ? adjacency : Arrays.copyOf(adjacency, rows));
      s = IvfSearch.uploadInts(device, seeds);
      ok = true;
      return new GpuGraphIndex(device, n, dims, metric, degree, seeds.length, v, g, s);
    } finally {
      if (!ok) {
        free(device, v, g, s);
      }
    }
  }

  /** The graph's shape: adjacency of n * degree ordinals in [-1, n), seeds in [0, n), at least one when n > 0. */
  public static void validateGraph(int n, int[] adjacency, int degree, int[] seeds) {
    Objects.requireNonNull(adjacency, "adjacency");
    Objects.requireNonNull(seeds, "seeds");
    if (degree < 1 || degree > MAX_DEGREE) {
      throw new IllegalArgumentException("degree must be in [1, " + MAX_DEGREE + "]: " + degree);
    }
    if (adjacency.length < (long) n * degree) {
      throw new IllegalArgumentException("adjacency needs n * degree = " + (long) n * degree + " ints, got "
          + adjacency.length);
    }
    for (int i = 0; i < n * degree; i++) {
      if (adjacency[i] < -1 || adjacency[i] >= n) {
        throw new IllegalArgumentException("adjacency of ordinal " + i / degree + " holds " + adjacency[i]
            + ", not an ordinal in [0, " + n + ") or -1");
      }
    }
    if (n > 0 && seeds.length == 0) {
      throw new IllegalArgumentException("a graph of " + n + " vectors needs at least one seed");
    }
    for (int s : seeds) {
      if (s < 0 || s >= n) {
        throw new IllegalArgumentException("seed " + s + " is not an ordinal in [0, " + n + ")");
      }
    }
  }

  /** Out-degree of the graph. */
  public int degree() {
    return degree;
  }

  /** Entry points of every walk (each scored once per query). */
  public int numSeeds() {
    return numSeeds;
  }

  /** Device memory held by this index: vectors (L2: and their norms), adjacency and seeds. */
  @Override
  public DeviceBytes deviceBytesByPart() {
    return DeviceBytes.builder()
        .add(vectors.deviceBytesByPart())
        .add(MemoryPart.GRAPH, graph.bytes() + seeds.bytes())
        .build();
  }

  /**
   * The k best vectors per query found by a beam search of width max({@link SearchParams.Graph#width}, k), or the
   * exact k best for {@link SearchParams#EXACT}; {@code acceptBits} null = all vectors may be returned, else by
   * ordinal (a walk traverses them all). Synchronous.
   */
  public SearchResult search(float[] queries, int numQueries, int k, SearchParams params, long[] acceptBits) {
    try (GpuDevice.Scope s = device.lock()) {
      ensureOpen();
      return BatchSearch.run(device,
          List.of(new SearchGroup(this, queries, numQueries, k, params, acceptBits, null)))[0];
    }
  }

  /**
   * A graph is walked ({@link SearchParams.Graph}, its list within the kernel's: {@link #width}) or searched exactly
   * ({@link SearchParams#EXACT}, no width limit).
   */
  @Override
  public void checkSearch(SearchParams params, int k) {
    checkParams(params, k);
  }

  /** {@link #checkSearch}, which depends on no index's shape. */
  public static void checkParams(SearchParams params, int k) {
    switch (params) {
      case SearchParams.Graph walk -> width(walk.width(), k);
      case SearchParams.Exact exact -> { }
      default -> throw new IllegalArgumentException(
          "GpuGraphIndex searches with SearchParams.Graph or SearchParams.Exact, not " + params);
    }
  }

  /** The table launch of a pass's small walks ({@link #enqueueWalkTable}, below {@link #SMALL_BATCH} queries each). */
  private static final WalkTable WALK_TABLE = new WalkTable() {
    @Override
    public int groupQueries() {
      return SMALL_BATCH;
    }

    @Override
    public void enqueue(GpuDevice device, List<SearchGroup> groups, boolean[] walked, GroupAddresses[] at) {
      enqueueWalkTable(device, groups, walked, at);
    }
  };

  @Override
  protected WalkTable walkTable() {
    return WALK_TABLE;
  }

  @Override
  protected boolean walks(SearchParams params) {
    return params instanceof SearchParams.Graph;
  }

  /** The internal list size of a walk for k with {@code searchWidth}: max(searchWidth, k), checked. */
  public static int width(int searchWidth, int k) {
    if (searchWidth < 1) {
      throw new IllegalArgumentException("search width must be >= 1: " + searchWidth);
    }
    int width = Math.max(searchWidth, k);
    if (width > MAX_WIDTH) {
      throw new IllegalArgumentException("search width must be at most " + MAX_WIDTH + ": " + width);
    }
    return width;
  }

  /**
   * The launch of one search: block size, the per-iteration expansion and candidate batch, the distance teams,
   * the visited set's size, the iteration cap and the dynamic shared memory (the kernel's graphSharedWords).
   */
  public record SearchPlan(int width, int k, int threads, int parents, int batch, int teamSize, int hashWords,
                    int maxIterations, int sharedBytes) {

    /** The plan of a large batch with the default configuration. */
    public static SearchPlan of(int dims, int degree, int k, int searchWidth) {
      return of(dims, degree, k, searchWidth, SMALL_BATCH);
    }

    /** The plan of a launch of {@code nq} queries with the default configuration. */
    public static SearchPlan of(int dims, int degree, int k, int searchWidth, int nq) {
      return of(GraphConfig.defaults(), dims, degree, k, searchWidth, nq);
    }

    /** The plan of a launch of {@code nq} queries on a device configured with {@code config}. */
    public static SearchPlan of(GraphConfig config, int dims, int degree, int k, int searchWidth, int nq) {
      int width = GpuGraphIndex.width(searchWidth, k);
      int t = config.threads(); // validated by GraphConfig
      if (t == 0) {
        t = nq < LATENCY_BATCH ? LATENCY_BATCH_THREADS : nq < SMALL_BATCH ? SMALL_BATCH_THREADS : 128;
      }
      int wanted = config.parents(); // validated by GraphConfig
      if (wanted == 0) {
        wanted = nq < LATENCY_BATCH ? latencyParents(width) : 1;
      }
      int p = Math.max(1, Math.min(wanted, 2048 / degree));
      int batch = Math.max(32, pow2Ceil(p * degree));
      int team = Math.min(32, pow2Ceil((dims + 15) / 16));
      // cleared at 1/16 of its bits (a Bloom filter, 2 bits of 32 per word: words * 2 ids); after a clear both lists
      // go back in, and a batch must still fit: 4x that for few clears, 2x where 4x would take the block past 96 KB
      // (wide searches: the 99 KB of sm_86 / sm_89 hold them)
      long fixed = 4L * ((dims + 3) / 4 * 4 + 4L * width + 2L * k + 4L * batch + 32 + 4);
      int needed = pow2Ceil(2 * (width + k + batch));
      int words = Math.max(VISITED_MIN_WORDS, 2 * needed);
      if (fixed + 4L * words > 96 << 10) {
        words = Math.max(needed, Math.min(words, VISITED_MIN_WORDS));
      }
      // a safety net: a search normally stops when every node of its list is expanded (at least width iterations
      // allowed, whatever the parents)
      int maxIterations = Math.max(width, 4 * width / p) + 100;
      long shared = fixed + 4L * words;
      return new SearchPlan(width, k, t, p, batch, team, words, maxIterations, (int) shared);
    }
  }

  public static int pow2Ceil(int x) {
    return x <= 1 ? 1 : Integer.highestOneBit(x - 1) << 1;
  }

  /**
   * A group's search in a pass, alone (not in a table launch of walks, {@link #enqueueWalkTable}): per query the k
   * best (distance, ordinal) pairs, as {@link GpuFlatIndex#enqueueSearch} writes them. {@link SearchParams#EXACT}:
   * the flat search of the accepted vectors, which reads the queries' squared norms (L2; 0 = computed there); else a
   * walk. Accept masks by ordinal: see {@link SelectParams#acceptBits(long, long)}. Caller holds the device lock.
   */
  @Override
  protected void enqueue(SearchGroup group, GroupAddresses at) {
    ensureOpen();
    int nq = group.numQueries();
    if (!(group.params() instanceof SearchParams.Graph params)) { // checked: the exact search
      vectors.enqueueSearch(at.queries(), at.norms(), nq, group.k(), at.accept(), at.acceptRowWords(), at.outV(),
          at.outI(), at.outAt());
      return;
    }
    Walk walk = walk(at.queries(), nq, group.k(), params.width(), at.accept(), at.acceptRowWords(), at.outV(),
        at.outI(), at.outAt(), nq);
    KernelModule m = device.module();
    m.allowDynamicShared("gv_graph_search", walk.plan().sharedBytes());
    m.launch("gv_graph_search", nq, 1, walk.plan().threads(), walk.plan().sharedBytes(), device.stream(),
        Pointer.to(walk.params().encode()));
  }

  /** One index's walk (a graph search, not an exact one) in a launch: its parameters and its plan. */
  record Walk(GraphSearchParams params, SearchPlan plan) {}

  /**
   * The walk of {@code nq} queries of width {@code searchWidth} as {@link #enqueue} would launch it, planned for a
   * launch of {@code launchQueries} blocks in all (the block size and the per-iteration expansion depend on how many blocks fill the
   * GPU: a walk launched with other indexes' walks is planned for all of them).
   */
  Walk walk(long queries, int nq, int k, int searchWidth, long acceptAddress, long acceptRowWords,
            DeviceBuffer outV, DeviceBuffer outI, long outElement, int launchQueries) {
    ensureOpen();
    SearchPlan plan = SearchPlan.of(device.config().graph(), dims, degree, k, searchWidth, launchQueries);
    GraphSearchParams p = new GraphSearchParams();
    p.vectors = vectors.vectorsAddress();
    p.graph = graph.address();
    p.seeds = seeds.address();
    p.queries = queries;
    p.acceptBits = acceptAddress;
    p.outK = outV.address() + 4L * outElement;
    p.outIdx = outI.address() + 4L * outElement;
    p.acceptRowWords = acceptRowWords;
    p.numQueries = nq;
    p.n = n;
    p.dims = dims;
    p.degree = degree;
    p.numSeeds = numSeeds;
    p.k = k;
    p.width = plan.width();
    p.batch = plan.batch();
    p.parents = plan.parents();
    p.teamSize = plan.teamSize();
    p.hashWords = plan.hashWords();
    p.metric = metric == Metric.L2 ? 0 : 1;
    p.maxIterations = plan.maxIterations();
    return new Walk(p, plan);
  }

  /**
   * Enqueues the walks of the pass's groups in {@code walked} ({@link BatchSearch#tableWalks}: graph groups whose
   * {@link #walks} parameters ask for a walk) as table launches ({@link #enqueueWalks}), each walk planned for all of
   * their queries; {@code at[g]}: group g's addresses in the pass. Caller holds the device lock.
   */
  static void enqueueWalkTable(GpuDevice device, List<SearchGroup> groups, boolean[] walked, GroupAddresses[] at) {
    int launchQueries = 0;
    for (int g = 0; g < groups.size(); g++) {
      launchQueries += walked[g] ? groups.get(g).numQueries() : 0;
    }
    List<Walk> walks = new java.util.ArrayList<>();
    for (int g = 0; g < groups.size(); g++) {
      if (walked[g]) { // a walk's group: a graph index's, with SearchParams.Graph (tableWalks asked the index)
        SearchGroup group = groups.get(g);
        GpuGraphIndex graph = (GpuGraphIndex) group.index();
        int width = ((SearchParams.Graph) group.params()).width();
        walks.add(graph.walk(at[g].queries(), group.numQueries(), group.k(), width, at[g].accept(),
            at[g].acceptRowWords(), at[g].outV(), at[g].outI(), at[g].outAt(), launchQueries));
      }
    }
    enqueueWalks(device, walks);
  }

  /**
   * Enqueues several indexes' walks (each planned with {@link #walk} for the same total of blocks, so they share
   * a block size) as launches of up to {@link GraphSearchParams#TABLE_ENTRIES} walks each ({@code
   * gv_graph_search_table}): a pass of a few queries over the many segments of an index then runs as one launch
   * that fills the GPU, not one launch per segment, each leaving most multiprocessors idle. Caller holds the
   * device lock.
   */
  static void enqueueWalks(GpuDevice device, List<Walk> walks) {
    for (int from = 0; from < walks.size(); from += GraphSearchParams.TABLE_ENTRIES) {
      List<Walk> chunk = walks.subList(from, Math.min(walks.size(), from + GraphSearchParams.TABLE_ENTRIES));
      int threads = chunk.get(0).plan().threads();
      int shared = 0;
      int blocks = 0;
      List<GraphSearchParams> entries = new java.util.ArrayList<>(chunk.size());
      for (Walk w : chunk) {
        if (w.plan().threads() != threads) {
          throw new IllegalArgumentException("walks of one launch need one block size: " + threads + " and "
              + w.plan().threads());
        }
        shared = Math.max(shared, w.plan().sharedBytes());
        blocks += w.params().numQueries;
        entries.add(w.params());
      }
      if (blocks == 0) {
        continue;
      }
      KernelModule m = device.module();
      m.allowDynamicShared("gv_graph_search_table", shared);
      m.launch("gv_graph_search_table", blocks, 1, threads, shared, device.stream(),
          Pointer.to(GraphSearchParams.encodeTable(entries)));
    }
  }

  @Override
  protected void freeDeviceMemory() {
    free(device, vectors, graph, seeds);
  }
}
