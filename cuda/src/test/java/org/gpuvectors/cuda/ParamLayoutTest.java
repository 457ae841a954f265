package org.gpuvectors.cuda;

import org.gpuvectors.cuda.build.CentroidMeansParams;
import org.gpuvectors.cuda.build.CodebookAssignParams;
import org.gpuvectors.cuda.build.FarthestStepParams;
import org.gpuvectors.cuda.build.GraphPruneParams;
import org.gpuvectors.cuda.build.NeighbourGapParams;
import org.gpuvectors.cuda.build.ReverseLinksParams;
import org.gpuvectors.cuda.flat.ElementScanParams;
import org.gpuvectors.cuda.flat.FlatScanParams;
import org.gpuvectors.cuda.flat.FlatScanTable;
import org.gpuvectors.cuda.flat.FusedParams;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.flat.HalfScanParams;
import org.gpuvectors.cuda.graph.GraphSearchParams;
import org.gpuvectors.cuda.ivf.GpuIvfPqIndex;
import org.gpuvectors.cuda.ivf.IvfGroupParams;
import org.gpuvectors.cuda.ivf.IvfPqScanParams;
import org.gpuvectors.cuda.ivf.IvfPqScanTable;
import org.gpuvectors.cuda.ivf.IvfScanParams;
import org.gpuvectors.cuda.rerank.RerankParams;
import org.gpuvectors.cuda.rerank.RerankTable;
import org.gpuvectors.cuda.runtime.ParamTable;
import org.gpuvectors.cuda.runtime.StructLayout.Member;
import org.gpuvectors.cuda.runtime.StructLayout;
import org.gpuvectors.cuda.select.KSelect;
import org.gpuvectors.cuda.select.SelectParams;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each parameter class's declared {@link StructLayout} against the CUDA struct it mirrors, read from {@code
 * common.cuh} itself ({@link CommonCuhStructs}): the same members by name, in order, with their types, offsets and the
 * struct's size; and its {@code encode()} puts each same-named field at its member's offset. Adding a member on one
 * side only, or reordering, fails here and not on a GPU. Likewise the table launches' and kernels' constants.
 */
class ParamLayoutTest {

  /** A parameter class: its declared layout, its {@code BYTES}, a new instance, its {@code encode()}. */
  private record Params<T>(StructLayout<T> layout, int bytes, Supplier<T> create, Function<T, byte[]> encode) {
    @Override
    public String toString() {
      return layout.name();
    }
  }

  static Stream<Params<?>> params() {
    return Stream.of(
        new Params<>(SelectParams.LAYOUT, SelectParams.BYTES, SelectParams::new, SelectParams::encode),
        new Params<>(IvfScanParams.LAYOUT, IvfScanParams.BYTES, IvfScanParams::new, IvfScanParams::encode),
        new Params<>(IvfGroupParams.LAYOUT, IvfGroupParams.BYTES, IvfGroupParams::new, IvfGroupParams::encode),
        new Params<>(IvfPqScanParams.LAYOUT, IvfPqScanParams.BYTES, IvfPqScanParams::new, IvfPqScanParams::encode),
        new Params<>(FusedParams.LAYOUT, FusedParams.BYTES, FusedParams::new, FusedParams::encode),
        new Params<>(RerankParams.LAYOUT, RerankParams.BYTES, RerankParams::new, RerankParams::encode),
        new Params<>(FlatScanParams.LAYOUT, FlatScanParams.BYTES, FlatScanParams::new, FlatScanParams::encode),
        new Params<>(ElementScanParams.LAYOUT, ElementScanParams.BYTES, ElementScanParams::new,
            ElementScanParams::encode),
        new Params<>(HalfScanParams.LAYOUT, HalfScanParams.BYTES, HalfScanParams::new, HalfScanParams::encode),
        new Params<>(GraphSearchParams.LAYOUT, GraphSearchParams.BYTES, GraphSearchParams::new,
            GraphSearchParams::encode),
        new Params<>(GraphPruneParams.LAYOUT, GraphPruneParams.BYTES, GraphPruneParams::new, GraphPruneParams::encode),
        new Params<>(FarthestStepParams.LAYOUT, FarthestStepParams.BYTES, FarthestStepParams::new,
            FarthestStepParams::encode),
        new Params<>(NeighbourGapParams.LAYOUT, NeighbourGapParams.BYTES, NeighbourGapParams::new,
            NeighbourGapParams::encode),
        new Params<>(ReverseLinksParams.LAYOUT, ReverseLinksParams.BYTES, ReverseLinksParams::new,
            ReverseLinksParams::encode),
        new Params<>(CodebookAssignParams.LAYOUT, CodebookAssignParams.BYTES, CodebookAssignParams::new,
            CodebookAssignParams::encode),
        new Params<>(CentroidMeansParams.LAYOUT, CentroidMeansParams.BYTES, CentroidMeansParams::new,
            CentroidMeansParams::encode));
  }

  /** The declared members are the struct's: same names, order, types and offsets; the same size; BYTES that size. */
  @ParameterizedTest
  @MethodSource("params")
  void layoutIsTheStructInCommonCuh(Params<?> p) throws IOException {
    String struct = p.layout().name();
    assertEquals(describe(CommonCuhStructs.members(struct)), describe(p.layout().members()), struct);
    assertEquals(CommonCuhStructs.sizeof(struct), p.layout().bytes(), struct + ": sizeof");
    assertEquals(p.layout().bytes(), p.bytes(), struct + ": BYTES");
  }

  /**
   * {@code encode()} writes each member's same-named Java field (every field distinct) at the member's offset, with
   * the member's type, and nothing else (pads zero): an accessor that reads the wrong field fails here.
   */
  @ParameterizedTest
  @MethodSource("params")
  void encodePutsEachFieldAtItsMembersOffset(Params<?> p) throws Exception {
    assertEncodesFields(p);
  }

  private static <T> void assertEncodesFields(Params<T> p) throws Exception {
    String struct = p.layout().name();
    T params = DistinctFields.fill(p.create().get());
    ByteBuffer expected = ByteBuffer.allocate(CommonCuhStructs.sizeof(struct)).order(ByteOrder.LITTLE_ENDIAN);
    for (Member m : CommonCuhStructs.members(struct)) {
      if (m.name().equals("pad")) {
        continue; // alignment filler: zero, no Java field
      }
      Field field = params.getClass().getDeclaredField(m.name());
      field.setAccessible(true); // the build steps' parameter classes live in another package
      Object value = field.get(params);
      switch (m.type()) {
        case I64 -> expected.putLong(m.offset(), (Long) value);
        case I32 -> expected.putInt(m.offset(), value instanceof Boolean b ? (b ? 1 : 0) : (Integer) value);
        case F32 -> expected.putFloat(m.offset(), (Float) value);
      }
    }
    assertArrayEquals(expected.array(), p.encode().apply(params), struct);
  }

  private static List<String> describe(List<Member> members) {
    return members.stream().map(m -> m.name() + " " + m.type() + " @" + m.offset()).toList();
  }

  @Test
  void groupedScanConstantsMatchCommonCuh() throws IOException {
    assertEquals(IvfGroupParams.TILE_QUERIES, constant("kIvfTileQueries"));
    assertEquals(IvfGroupParams.THREADS, constant("kIvfGroupedThreads"));
    assertEquals(IvfGroupParams.SHARED_BYTES, constant("kIvfGroupedSharedBytes"));
  }

  @Test
  void pqCodeLayoutMatchesCommonCuh() throws IOException {
    assertEquals(GpuIvfPqIndex.CODE_GROUP, constant("kPqCodeGroup"));
    assertEquals(GpuIvfPqIndex.CODE_CHUNK_BYTES, constant("kPqCodeChunkBytes"));
  }

  /** The radix selection's launch constants and row state size against select_kernels.cu. */
  @Test
  void radixSelectionConstantsMatchSelectKernels() throws IOException {
    String kernels = Files.readString(Path.of("src/main/cuda/select_kernels.cu"));
    assertEquals(KSelect.RADIX_THREADS, constant(kernels, "kRadixThreads"));
    assertEquals(KSelect.RADIX_VALUES_PER_BLOCK, KSelect.RADIX_THREADS * constant(kernels, "kRadixUnroll"));
    assertEquals(KSelect.MAX_K, constant(kernels, "kRadixMaxK"));
    assertTrue(KSelect.RADIX_DIGIT_PASSES * constant(kernels, "kRadixDigitBits") >= 32, "digit passes cover a key");
    assertEquals(KSelect.RADIX_DIGIT_PASSES, constant(kernels, "kRadixDigitPasses"), "gv_radix_fused's digit passes");
    Matcher size = Pattern.compile("static_assert\\(sizeof\\(RadixRow\\) == (\\d+),").matcher(kernels);
    assertTrue(size.find(), "RadixRow's size asserted in select_kernels.cu");
    assertEquals(KSelect.RADIX_ROW_BYTES, Long.parseLong(size.group(1)));
  }

  /**
   * The table launches' argument ({@link ParamTable}, the CUDA side's {@code {int entries; int pad; P entry[N];}}): the
   * count, a zero pad, each entry at 8 + e x its size, unused slots zero; no entries, too many, or an entry of
   * another size are refused.
   */
  @Test
  void paramTableLaysOutCountPadAndEntries() {
    byte[] a = {1, 2, 3, 4};
    byte[] b = {5, 6, 7, 8};
    ByteBuffer t = ByteBuffer.wrap(ParamTable.encode("test", 3, 4, List.of(a, b))).order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(ParamTable.bytes(3, 4), t.capacity());
    assertEquals(2, t.getInt(0));
    assertEquals(0, t.getInt(4));
    byte[] body = new byte[12];
    t.get(8, body);
    assertArrayEquals(new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0}, body);
    assertThrows(IllegalArgumentException.class, () -> ParamTable.encode("test", 3, 4, List.of()));
    assertThrows(IllegalArgumentException.class, () -> ParamTable.encode("test", 1, 4, List.of(a, b)));
    assertThrows(IllegalArgumentException.class, () -> ParamTable.encode("test", 3, 4, List.of(new byte[3])));
  }

  /** The small-search table (coarse steps of several segments) against exact_kernels.cu and common.cuh. */
  @Test
  void fusedTableMatchesExactKernels() throws IOException {
    String kernels = Files.readString(Path.of("src/main/cuda/exact_kernels.cu"));
    assertEquals(GpuFlatIndex.TABLE_ENTRIES, constant(kernels, "kFusedTableEntries"));
    assertTrue(kernels.contains("static_assert(sizeof(FusedTable) == 8 + kFusedTableEntries * sizeof(FusedParams),"),
        "size asserted");
    assertTrue(CommonCuhStructs.source().contains("static_assert(sizeof(FusedParams) == " + FusedParams.BYTES + ","),
        "FusedParams' size");
    assertTrue(8 + GpuFlatIndex.TABLE_ENTRIES * FusedParams.BYTES <= 4096, "within a launch's 4 KB");
    for (int bucket = 32; bucket <= 2048; bucket <<= 1) {
      assertEquals(bucket <= GpuFlatIndex.TABLE_MAX_BUCKET, kernels.contains("gv_fused_search_table_k" + bucket + "("),
          "gv_fused_search_table_k" + bucket);
    }
  }

  /** The re-rank table's capacity and size against rerank_kernels.cu (passed by value: within a launch's 4 KB). */
  @Test
  void rerankTableMatchesRerankKernels() throws IOException {
    String kernels = Files.readString(Path.of("src/main/cuda/rerank_kernels.cu"));
    assertEquals(RerankTable.MAX_ENTRIES, constant(kernels, "kRerankTableEntries"));
    assertTrue(kernels.contains("static_assert(sizeof(RerankTable) == 8 + kRerankTableEntries * 28,"), "size asserted");
    assertEquals(8 + RerankTable.MAX_ENTRIES * 28, RerankTable.BYTES);
    assertEquals(RerankTable.BYTES, new RerankTable().encode().length);
    assertTrue(RerankTable.BYTES + RerankParams.BYTES <= 4096, "the launch's parameters fit 4 KB");
  }

  /** The small-batch ivf_pq scan's launch constants and scan table against ivf_pq_tables.cu. */
  @Test
  void keysScanConstantsMatchIvfPqTables() throws IOException {
    String kernels = Files.readString(Path.of("src/main/cuda/ivf_pq_tables.cu"));
    assertEquals(IvfPqScanTable.MAX_ENTRIES, constant(kernels, "kPqScanTableEntries"));
    assertTrue(kernels.contains("static_assert(sizeof(IvfPqScanTable) == 8 + kPqScanTableEntries"
        + " * sizeof(IvfPqScanParams),"), "size asserted");
    assertEquals(8 + IvfPqScanTable.MAX_ENTRIES * IvfPqScanParams.BYTES, IvfPqScanTable.BYTES);
    assertEquals(IvfPqScanTable.BYTES, IvfPqScanTable.encode(java.util.List.of(new IvfPqScanParams())).length);
    assertTrue(IvfPqScanTable.BYTES + 4 <= 4096, "the launch's parameters fit 4 KB");
    assertEquals(GpuIvfPqIndex.KEYS_THREADS, constant(kernels, "kPqKeysThreads"));
    assertEquals(GpuIvfPqIndex.KEYS_MIN_CODES_PER_BLOCK, constant(kernels, "kPqKeysMinCodes"));
    assertEquals(GpuIvfPqIndex.SHORT_CODE_CHUNKS, constant(kernels, "kPqShortCodeChunks"));
  }

  private static int constant(String source, String name) {
    Matcher m = Pattern.compile("constexpr int " + name + " = (\\d+);").matcher(source);
    assertTrue(m.find(), name);
    return Integer.parseInt(m.group(1));
  }

  /** The value of {@code constexpr int name = value;} in common.cuh. */
  private static int constant(String name) throws IOException {
    Matcher m = Pattern.compile("constexpr int " + name + " = (\\d+);").matcher(CommonCuhStructs.source());
    assertTrue(m.find(), name + " in common.cuh");
    return Integer.parseInt(m.group(1));
  }

  /** The most parents a {@link GraphConfig} accepts: what graph_search.cu's kernel holds. */
  @Test
  void graphMaxParentsMatchesGraphSearch() throws IOException {
    String kernels = Files.readString(Path.of("src/main/cuda/graph_search.cu"));
    assertEquals(GraphConfig.MAX_PARENTS, constant(kernels, "kGraphMaxParents"));
  }

  @Test
  void graphSearchTableMatchesCommonCuh() throws Exception {
    assertEquals(GraphSearchParams.TABLE_ENTRIES, constant("kGraphTableEntries"));
    assertEquals(List.of("entries", "pad"),
        CommonCuhStructs.members("GraphSearchTable").stream().map(Member::name).toList(),
        "the table's header; the entries follow at byte 8");
    // each entry encodes as the kernel reads it: entry e at 8 + e * GraphSearchParams.BYTES
    GraphSearchParams first = new GraphSearchParams();
    first.numQueries = 3;
    GraphSearchParams second = new GraphSearchParams();
    second.numQueries = 5;
    second.vectors = 0x1122334455667788L;
    byte[] table = GraphSearchParams.encodeTable(List.of(first, second));
    assertEquals(GraphSearchParams.TABLE_BYTES, table.length);
    ByteBuffer b = ByteBuffer.wrap(table).order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(2, b.getInt(0));
    assertEquals(0x1122334455667788L, b.getLong(8 + GraphSearchParams.BYTES));
    assertArrayEquals(first.encode(), java.util.Arrays.copyOfRange(table, 8, 8 + GraphSearchParams.BYTES));
    assertArrayEquals(second.encode(),
        java.util.Arrays.copyOfRange(table, 8 + GraphSearchParams.BYTES, 8 + 2 * GraphSearchParams.BYTES));
    assertThrows(IllegalArgumentException.class, () -> GraphSearchParams.encodeTable(List.of()));
  }

  /** The k-means kernels' block sizes against kmeans.cu. */
  @Test
  void kmeansConstantsMatchKernels() throws IOException {
    String kernels = Files.readString(Path.of("src/main/cuda/kmeans.cu"));
    assertEquals(CodebookAssignParams.THREADS, constant(kernels, "kAssignThreads"));
    assertEquals(CentroidMeansParams.THREADS, constant(kernels, "kMeansThreads"));
  }

  /** The small-batch flat scan's launch constants and table against flat_scan.cu, its shared memory within an A100's. */
  @Test
  void flatScanConstantsMatchFlatScan() throws IOException {
    String kernels = Files.readString(Path.of("src/main/cuda/flat_scan.cu"));
    assertEquals(FlatScanParams.QUERIES_PER_BLOCK, constant(kernels, "kFlatScanQueries"));
    assertEquals(FlatScanParams.THREADS, constant(kernels, "kFlatScanThreads"));
    assertEquals(FlatScanParams.ROWS, constant(kernels, "kFlatScanRows"));
    assertEquals(FlatScanParams.ROWS_PER_THREAD, constant(kernels, "kFlatScanRowsPerThread"));
    assertEquals(FlatScanParams.SLAB, constant(kernels, "kFlatScanSlab"));
    assertEquals(FlatScanParams.PITCH, constant(kernels, "kFlatScanPitch"));
    assertEquals(FlatScanTable.MAX_ENTRIES, constant(kernels, "kFlatScanTableEntries"));
    assertTrue(kernels.contains("static_assert(sizeof(FlatScanTable) == 8 + kFlatScanTableEntries * sizeof(FlatScanParams),"),
        "size asserted");
    assertTrue(FlatScanTable.BYTES <= 4096, "the table launch's parameters fit 4 KB");
    FlatScanParams widest = new FlatScanParams();
    widest.dims = FlatScanParams.MAX_DIMS;
    assertTrue(widest.sharedBytes() <= 163 << 10, "the widest scan's shared memory fits an A100 block (163 KB opt-in)");
  }

  /** The half scan's launch constants against flat_half_scan.cu; its shared memory at the widest dims. */
  @Test
  void halfScanConstantsMatchHalfScan() throws IOException {
    String kernels = Files.readString(Path.of("src/main/cuda/flat_half_scan.cu"));
    assertEquals(HalfScanParams.QUERIES_PER_BLOCK, constant(kernels, "kHalfScanQueries"));
    assertEquals(HalfScanParams.THREADS, constant(kernels, "kHalfScanThreads"));
    assertEquals(HalfScanParams.DIM_STEP, constant(kernels, "kHalfScanDimStep"));
    assertEquals(HalfScanParams.TOP, constant(kernels, "kHalfScanTop"));
    assertEquals(HalfScanParams.MIN_EXP, constant(kernels, "kHalfScanMinExp"));
    assertEquals(HalfScanParams.ROWS, constant(kernels, "kHalfScanWarpRows") * HalfScanParams.THREADS / 32);
    assertEquals(HalfScanParams.SHORT_ROW_DIMS, constant(kernels, "kHalfScanPrefetchDims"));
    for (int k = HalfScanParams.MIN_CHUNK_K; k <= HalfScanParams.MAX_K; k++) {
      HalfScanParams p = new HalfScanParams();
      p.k = k;
      assertTrue(kernels.contains("GV_HALF_SCAN(" + KSelect.bucket(k) + ")"), p.kernel() + " is built");
      assertTrue(kernels.contains("GV_HALF_SCAN_TABLE(" + KSelect.bucket(k) + ")"),
          p.kernel("gv_half_scan_table_", k) + " is built");
    }
    assertEquals(FlatScanTable.MAX_ENTRIES, constant(kernels, "kHalfScanTableEntries"));
    assertTrue(kernels.contains("static_assert(sizeof(HalfScanTable) == 8 + kHalfScanTableEntries * sizeof(HalfScanParams),"),
        "size asserted");
    assertTrue(FlatScanTable.HALF_BYTES <= 4096, "the half table launch's parameters fit 4 KB");
    HalfScanParams widest = new HalfScanParams();
    widest.dimsPad = HalfScanParams.paddedDims(HalfScanParams.MAX_DIMS);
    assertTrue(widest.sharedBytes() <= 163 << 10, "the widest half scan's shared memory fits an A100 block");
    assertEquals(160, HalfScanParams.queryPitch(128), "rows 64 words apart would share banks: padded");
    assertEquals(96, HalfScanParams.queryPitch(96));
  }

  /** The host's scale is the kernel's: below 2^14, the largest that keeps it there, clamped at 2^114. */
  @Test
  void halfScaleBringsTheLargestMagnitudeBelowTwoToTheFourteen() {
    for (float m : new float[] {1f, 0.75f, 255f, 256f, 65504f, 1e-20f, 3e38f, 0x1p-100f}) {
      float s = HalfScanParams.halfScale(m);
      assertTrue(m * s < 0x1p14f && m * s >= 0x1p13f, m + " x " + s);
    }
    assertEquals(0x1p114f, HalfScanParams.halfScale(1e-35f), "clamped");
    assertEquals(0x1p114f, HalfScanParams.halfScale(Float.MIN_VALUE), "subnormal: clamped");
    assertEquals(1f, HalfScanParams.halfScale(0f));
    assertEquals(1f, HalfScanParams.halfScale(Float.POSITIVE_INFINITY));
    assertEquals(1f, HalfScanParams.halfScale(Float.NaN));
  }
}
