package org.gpuvectors.codec;

import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.graph.GraphBuildPhases;
import org.gpuvectors.codec.graph.GraphBuilder;
import org.gpuvectors.codec.graph.GraphLayout;
import org.gpuvectors.codec.graph.GraphMerge;
import org.gpuvectors.codec.index.ElementType;
import org.gpuvectors.codec.index.FloatView;
import org.gpuvectors.codec.index.FloatViewVectors;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.index.VectorRows;
import org.gpuvectors.codec.ivf.Assigner;
import org.gpuvectors.codec.ivf.BuiltIvf;
import org.gpuvectors.codec.ivf.IvfBuildPhases;
import org.gpuvectors.codec.ivf.IvfBuilder;
import org.gpuvectors.codec.ivf.IvfPqBuilder;
import org.gpuvectors.codec.ivf.IvfProbes;
import org.gpuvectors.codec.ivf.KMeans;
import org.gpuvectors.codec.ivf.ProductQuantizer;
import static org.apache.lucene.search.DocIdSetIterator.NO_MORE_DOCS;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.lucene.codecs.CodecUtil;
import org.apache.lucene.codecs.KnnFieldVectorsWriter;
import org.apache.lucene.codecs.KnnVectorsWriter;
import org.apache.lucene.codecs.hnsw.FlatFieldVectorsWriter;
import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.DocsWithFieldSet;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.IndexFileNames;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.index.MergeState;
import org.apache.lucene.index.SegmentWriteState;
import org.apache.lucene.index.Sorter;
import org.apache.lucene.store.IndexOutput;
import org.apache.lucene.util.IORunnable;
import org.apache.lucene.util.IOUtils;
import org.apache.lucene.util.RamUsageEstimator;

/**
 * Writes the {@link GpuVectorsFormat} files: raw vectors through the wrapped flat vectors writer,
 * then one meta entry (and the field's index data) per field at flush and at merge. IVF fields get
 * their lists built here ({@link IvfBuilder}: k-means on the GPU when the node has one), and
 * {@code ivf_pq} fields their codes too ({@link IvfPqBuilder}); graph fields their graph ({@link
 * GraphBuilder}: the k-NN graph on the GPU when the node has one); unless the segment holds fewer
 * vectors than the format's threshold: then the segment's entry says flat. A merge builds from the
 * merged vectors (without the deleted documents), with two exceptions for graphs: a merge of a lone
 * segment without deletions takes over its graph ({@link SingleSegmentGraph}), and any other merge whose
 * k-NN step runs on the CPU starts that step from the merged segments' graphs ({@link MergedGraphs},
 * {@link GraphMerge}). Fields of every element type are built alike, over their vectors' float view ({@link
 * FloatView}); each element type's raw vectors go to its own flat writer ({@link FlatWriters}).
 */
final class GpuVectorsWriter extends KnnVectorsWriter {

  private static final System.Logger LOG = System.getLogger(GpuVectorsWriter.class.getName());
  /** Graph and IVF builds at least this long are logged at INFO, shorter ones at DEBUG (FINE). */
  static final double BUILD_INFO_SECONDS = 1.0;
  private static final long SHALLOW_RAM_BYTES_USED =
      RamUsageEstimator.shallowSizeOfInstance(GpuVectorsWriter.class);

  private final FlatWriters flatWriters;
  private final SegmentWriteState state;
  private final IndexParams unmarkedFields;
  private final int ivfMinVectors;
  private final IndexOutput meta;
  private final IndexOutput data;
  private final List<FieldWriter> fields = new ArrayList<>();
  private boolean finished;

  GpuVectorsWriter(
      SegmentWriteState state, FlatWriters flatWriters, IndexParams unmarkedFields, int ivfMinVectors)
      throws IOException {
    this.flatWriters = flatWriters;
    this.state = state;
    this.unmarkedFields = unmarkedFields;
    this.ivfMinVectors = ivfMinVectors;
    String metaFileName =
        IndexFileNames.segmentFileName(
            state.segmentInfo.name, state.segmentSuffix, GpuVectorsFormat.META_EXTENSION);
    String dataFileName =
        IndexFileNames.segmentFileName(
            state.segmentInfo.name, state.segmentSuffix, GpuVectorsFormat.DATA_EXTENSION);
    boolean success = false;
    IndexOutput metaOut = null;
    IndexOutput dataOut = null;
    try {
      metaOut = state.directory.createOutput(metaFileName, state.context);
      dataOut = state.directory.createOutput(dataFileName, state.context);
      CodecUtil.writeIndexHeader(
          metaOut,
          GpuVectorsFormat.META_CODEC_NAME,
          GpuVectorsFormat.VERSION_CURRENT,
          state.segmentInfo.getId(),
          state.segmentSuffix);
      CodecUtil.writeIndexHeader(
          dataOut,
          GpuVectorsFormat.DATA_CODEC_NAME,
          GpuVectorsFormat.VERSION_CURRENT,
          state.segmentInfo.getId(),
          state.segmentSuffix);
      success = true;
    } finally {
      if (success == false) {
        IOUtils.closeWhileHandlingException(metaOut, dataOut, flatWriters);
      }
    }
    this.meta = metaOut;
    this.data = dataOut;
  }

  /**
   * Returns the field's index type, rejecting types this version cannot build and types its element type cannot
   * have ({@link GpuVectorsFormat#checkIndexType}).
   *
   * @throws IllegalArgumentException for unknown or unimplemented index types, or one refused for the element type
   */
  private IndexType checkIndexType(FieldInfo fieldInfo) {
    IndexType type = params(fieldInfo).type(); // checks the parameters too
    try {
      GpuVectorsFormat.checkIndexType(type, GpuVectorsFormat.elementType(fieldInfo));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(e.getMessage() + " (field [" + fieldInfo.name + "])", e);
    }
    if (type.isImplemented() == false) {
      throw new IllegalArgumentException(
          "index type ["
              + type.typeName()
              + "] is not implemented yet; available types are "
              + IndexType.implementedNames()
              + " (field ["
              + fieldInfo.name
              + "])");
    }
    return type;
  }

  @Override
  public KnnFieldVectorsWriter<?> addField(FieldInfo fieldInfo) throws IOException {
    IndexType type = IndexType.FLAT;
    IllegalArgumentException rejection = null;
    try {
      type = checkIndexType(fieldInfo);
    } catch (IllegalArgumentException e) {
      // Throwing here would abort the IndexWriter (Lucene treats addField failures as tragic).
      // Instead the field is kept as an empty flat field and every value is refused, which fails
      // only the documents that use it.
      rejection = e;
    }
    ElementType elementType = storedElementType(fieldInfo);
    FlatFieldVectorsWriter<?> flatFieldWriter = flatWriters.of(elementType).addField(fieldInfo);
    fields.add(new FieldWriter(fieldInfo, type, elementType, flatFieldWriter));
    // flat: nothing to build per vector, the flat writer buffers the vectors for us
    return rejection == null
        ? flatFieldWriter
        : new RejectingFieldVectorsWriter<>(flatFieldWriter, rejection.getMessage());
  }

  /**
   * The element type whose flat format holds the field's vectors: the field's, or its encoding's default where its
   * attribute is unusable (such a field is refused, see {@link #addField}, and holds no vector).
   */
  private static ElementType storedElementType(FieldInfo fieldInfo) {
    try {
      return GpuVectorsFormat.elementType(fieldInfo);
    } catch (IllegalArgumentException e) {
      return ElementType.of(null, fieldInfo.getVectorEncoding());
    }
  }

  @Override
  public void flush(int maxDoc, Sorter.DocMap sortMap) throws IOException {
    flatWriters.flush(maxDoc, sortMap);
    for (FieldWriter field : fields) {
      int count = field.flatFieldWriter.getDocsWithFieldSet().cardinality();
      IndexType built = IndexType.FLAT;
      long dataOffset = data.getFilePointer();
      if (buildsIndex(field.fieldInfo, field.indexType, count)) {
        int[] oldToNew = null;
        if (sortMap != null) {
          // the index is built on the buffered (unsorted) ordinals: rename them as the sorted segment numbers them
          oldToNew = new int[count];
          KnnVectorsWriter.mapOldOrdToNewOrd(
              field.flatFieldWriter.getDocsWithFieldSet(), sortMap, oldToNew, new int[count], new DocsWithFieldSet());
        }
        writeIndex(
            field.fieldInfo,
            field.indexType,
            bufferedView(field),
            oldToNew,
            "flush",
            new IvfBuildPhases());
        built = field.indexType;
      }
      writeMeta(field.fieldInfo, field.elementType, built, count, dataOffset, data.getFilePointer() - dataOffset);
    }
  }

  /** A flush's buffered vectors of the field, in their float view ({@link FloatView}). */
  @SuppressWarnings("unchecked")
  private static FloatVectorValues bufferedView(FieldWriter field) {
    int dims = field.fieldInfo.getVectorDimension();
    return switch (field.elementType.encoding()) {
      case FLOAT32 -> VectorRows.buffered((List<float[]>) field.flatFieldWriter.getVectors(), dims);
      case BYTE -> FloatViewVectors.of(
          ByteVectorValues.fromBytes((List<byte[]>) field.flatFieldWriter.getVectors(), dims), field.elementType);
    };
  }

  @Override
  public IORunnable mergeOneField(FieldInfo fieldInfo, MergeState mergeState) throws IOException {
    ElementType elementType = storedElementType(fieldInfo);
    flatWriters.of(elementType).mergeOneFlatVectorField(fieldInfo, mergeState);
    IndexType type;
    try {
      type = checkIndexType(fieldInfo);
    } catch (IllegalArgumentException e) {
      if (countMergedVectors(fieldInfo, mergeState) > 0) {
        throw e;
      }
      type = IndexType.FLAT; // a rejected field (see addField): it never got any vector
    }
    long dataOffset = data.getFilePointer();
    if (type == IndexType.FLAT) {
      int count = countMergedVectors(fieldInfo, mergeState);
      writeMeta(fieldInfo, elementType, IndexType.FLAT, count, dataOffset, 0);
      return null;
    }
    if (type == IndexType.GRAPH && writeReusedGraph(fieldInfo, mergeState, dataOffset)) {
      return null;
    }
    // the lists need random access to the merged vectors: a temporary copy, read back off-heap
    IvfBuildPhases phases = new IvfBuildPhases();
    try (MergedVectorsFile merged = MergedVectorsFile.write(state, fieldInfo, elementType, mergeState)) {
      phases.end(IvfBuildPhases.Phase.COPY);
      IndexType built = IndexType.FLAT;
      if (buildsIndex(fieldInfo, type, merged.size())) {
        // null (a rebuild) when the merged segments' graphs hold too few of the merged vectors (GraphMerge#pays)
        GraphMerge graphs = type == IndexType.GRAPH ? MergedGraphs.of(fieldInfo, mergeState, merged.size()) : null;
        writeIndex(fieldInfo, type, merged.vectors(), null, graphs, graphs == null ? "merge" : "merge from graphs",
            phases);
        built = type;
      }
      writeMeta(fieldInfo, elementType, built, merged.size(), dataOffset, data.getFilePointer() - dataOffset);
    }
    return null;
  }

  /**
   * A merge of one segment whose graph it can take over ({@link SingleSegmentGraph}): writes that
   * graph and the field's meta entry, and returns true; else writes nothing and returns false.
   */
  private boolean writeReusedGraph(FieldInfo fieldInfo, MergeState mergeState, long dataOffset) throws IOException {
    if (mergeState.knnVectorsReaders.length != 1) {
      return false; // (checked again below; spares counting the vectors of a many-segment merge)
    }
    GraphBuildPhases phases = new GraphBuildPhases();
    int count = countMergedVectors(fieldInfo, mergeState);
    if (buildsIndex(fieldInfo, IndexType.GRAPH, count) == false) {
      return false;
    }
    IndexParams params = params(fieldInfo);
    int degree = GraphBuilder.degree(params.get(IndexParams.DEGREE));
    GraphLayout graph =
        SingleSegmentGraph.reusable(
            fieldInfo,
            mergeState,
            degree,
            GraphBuilder.buildDegree(params.get(IndexParams.BUILD_DEGREE), degree),
            GraphBuilder.searchWidth(params.get(IndexParams.SEARCH_WIDTH)),
            count);
    if (graph == null) {
      return false;
    }
    graph.writeTo(data);
    phases.end(GraphBuildPhases.Phase.WRITE);
    logBuild(fieldInfo, IndexType.GRAPH, "merge of one segment, its graph reused", count, phases.totalSeconds(),
        phases.toString());
    writeMeta(fieldInfo, storedElementType(fieldInfo), IndexType.GRAPH, count, dataOffset,
        data.getFilePointer() - dataOffset);
    return true;
  }

  /**
   * Whether a field of this type and size gets its search structure: small segments stay flat, and so
   * do graph and ivf_pq segments too large for the build's arrays ({@link GraphBuilder#fits}, {@link
   * IvfPqBuilder#fits}; logged).
   */
  private boolean buildsIndex(FieldInfo fieldInfo, IndexType type, int count) {
    boolean builds = type.buildsIndex() && count >= Math.max(1, ivfMinVectors);
    if (builds && type == IndexType.GRAPH) {
      IndexParams params = params(fieldInfo);
      int buildDegree =
          GraphBuilder.buildDegree(params.get(IndexParams.BUILD_DEGREE), GraphBuilder.degree(params.get(IndexParams.DEGREE)));
      if (GraphBuilder.fits(count, buildDegree) == false) {
        LOG.log(System.Logger.Level.WARNING,
            "gpu-vectors: field [{0}] keeps {1} vectors flat in this segment: a graph at build_degree {2} is too large",
            fieldInfo.name, count, buildDegree);
        return false;
      }
    }
    if (builds && type == IndexType.IVF_PQ) {
      int m = ProductQuantizer.m(params(fieldInfo).get(IndexParams.PQ_M), fieldInfo.getVectorDimension());
      if (IvfPqBuilder.fits(count, m) == false) {
        LOG.log(System.Logger.Level.WARNING,
            "gpu-vectors: field [{0}] keeps {1} vectors flat in this segment: their ivf_pq codes of {2} bytes are too large",
            fieldInfo.name, count, m);
        return false;
      }
    }
    return builds;
  }

  /** The field's parameters: from its attributes, or the format's for unmarked fields. */
  private IndexParams params(FieldInfo fieldInfo) {
    return GpuVectorsFormat.isMarked(fieldInfo) ? IndexParams.of(fieldInfo) : unmarkedFields;
  }

  /**
   * Builds the field's structure on {@code vectors} and writes it to the data file; {@code oldToNew}
   * (null: none) renames the ordinals as the segment numbers them (a flush under index sorting). An IVF
   * build's phases go on in {@code ivfPhases} (a merge has timed its copy of the vectors there already)
   * and are logged with it; a graph build times its own.
   */
  private void writeIndex(FieldInfo fieldInfo, IndexType type, FloatVectorValues vectors, int[] oldToNew, String cause,
                          IvfBuildPhases ivfPhases) throws IOException {
    writeIndex(fieldInfo, type, vectors, oldToNew, null, cause, ivfPhases);
  }

  /** {@link #writeIndex}; a merge's graph build may start from the merged segments' graphs ({@code merge}, or null). */
  private void writeIndex(FieldInfo fieldInfo, IndexType type, FloatVectorValues vectors, int[] oldToNew,
                          GraphMerge merge, String cause, IvfBuildPhases ivfPhases) throws IOException {
    if (type == IndexType.GRAPH) {
      GraphBuildPhases phases = new GraphBuildPhases();
      GraphLayout graph = buildGraph(fieldInfo, vectors, merge, phases);
      phases.restart();
      (oldToNew == null ? graph : graph.remap(oldToNew)).writeTo(data);
      phases.end(GraphBuildPhases.Phase.WRITE);
      logBuild(fieldInfo, IndexType.GRAPH, cause, vectors.size(), phases.totalSeconds(), phases.toString());
      return;
    }
    BuiltIvf layout = buildLists(fieldInfo, type, vectors, ivfPhases);
    writeLists(fieldInfo, oldToNew == null ? layout : layout.remap(oldToNew));
    ivfPhases.end(IvfBuildPhases.Phase.WRITE);
    logBuild(fieldInfo, type, cause, vectors.size(), ivfPhases.totalSeconds(), ivfPhases.toString());
  }

  /**
   * The field's graph (k-NN graph on the GPU when the node has one, else on the CPU, there from the merged segments'
   * graphs when {@code merge} is not null).
   */
  private GraphLayout buildGraph(FieldInfo fieldInfo, FloatVectorValues vectors, GraphMerge merge,
                                 GraphBuildPhases phases) throws IOException {
    IndexParams params = params(fieldInfo);
    int degree = GraphBuilder.degree(params.get(IndexParams.DEGREE));
    return GraphBuilder.build(
        vectors,
        metric(fieldInfo),
        degree,
        GraphBuilder.buildDegree(params.get(IndexParams.BUILD_DEGREE), degree),
        GraphBuilder.searchWidth(params.get(IndexParams.SEARCH_WIDTH)),
        GpuSearchServices.current().buildAcceleration().knnFinder(),
        merge,
        phases);
  }

  /**
   * One line per graph or IVF build with its phases ({@link GraphBuildPhases}, {@link IvfBuildPhases}): INFO
   * when it took at least {@link #BUILD_INFO_SECONDS} (the builds worth knowing about), FINE otherwise (small
   * flushes).
   */
  private void logBuild(FieldInfo fieldInfo, IndexType type, String cause, int size, double seconds, String phases) {
    System.Logger.Level level = seconds >= BUILD_INFO_SECONDS ? System.Logger.Level.INFO : System.Logger.Level.DEBUG;
    if (LOG.isLoggable(level)) {
      LOG.log(level, "gpu-vectors: {0} of field [{1}] in segment {2} ({3}, {4} vectors): {5}",
          type.typeName(), fieldInfo.name, state.segmentInfo.name, cause, size, phases);
    }
  }

  /** The field's IVF structure: the lists, and for {@code ivf_pq} the codes of the vectors. */
  private BuiltIvf buildLists(FieldInfo fieldInfo, IndexType type, FloatVectorValues vectors, IvfBuildPhases phases)
      throws IOException {
    IndexParams params = params(fieldInfo);
    int nlist = IvfBuilder.nlist(params.get(IndexParams.NLIST), vectors.size());
    Metric metric = metric(fieldInfo);
    Assigner assigner = GpuSearchServices.current().buildAcceleration().assigner();
    return switch (type) {
      case IVF_FLAT ->
          IvfBuilder.build(vectors, nlist, metric, KMeans.DEFAULT_ITERATIONS, IvfBuilder.SEED, assigner, phases);
      case IVF_PQ ->
          IvfPqBuilder.build(
              vectors,
              nlist,
              ProductQuantizer.m(params.get(IndexParams.PQ_M), vectors.dimension()),
              ProductQuantizer.bits(params.get(IndexParams.PQ_BITS)),
              metric,
              KMeans.DEFAULT_ITERATIONS,
              IvfBuilder.SEED,
              assigner,
              phases);
      default -> throw new AssertionError("not an IVF type: " + type);
    };
  }

  /** The metric of the field's float view, which its structures are built in ({@link FloatView#metric}). */
  private static Metric metric(FieldInfo fieldInfo) {
    return FloatView.metric(storedElementType(fieldInfo), fieldInfo.getVectorSimilarityFunction());
  }

  private void writeLists(FieldInfo fieldInfo, BuiltIvf layout) throws IOException {
    IndexParams params = params(fieldInfo);
    layout.writeTo(data, IvfProbes.defaultProbes(params.get(IndexParams.NPROBE), layout.nlist()));
  }

  private static int countMergedVectors(FieldInfo fieldInfo, MergeState mergeState)
      throws IOException {
    KnnVectorValues merged =
        switch (fieldInfo.getVectorEncoding()) {
          case FLOAT32 -> MergedVectorValues.mergeFloatVectorValues(fieldInfo, mergeState);
          case BYTE -> MergedVectorValues.mergeByteVectorValues(fieldInfo, mergeState);
        };
    // the merged values' size() does not account for deleted documents: count by iterating
    KnnVectorValues.DocIndexIterator it = merged.iterator();
    int count = 0;
    while (it.nextDoc() != NO_MORE_DOCS) {
      count++;
    }
    return count;
  }

  /** Writes the field's meta entry, which {@code GpuVectorsReader.FieldEntry#create} reads. */
  private void writeMeta(
      FieldInfo fieldInfo, ElementType elementType, IndexType type, int count, long dataOffset, long dataLength)
      throws IOException {
    meta.writeInt(fieldInfo.number);
    meta.writeVInt(type.code());
    meta.writeInt(GpuVectorsFormat.VECTOR_ENCODINGS.indexOf(fieldInfo.getVectorEncoding()));
    meta.writeInt(
        GpuVectorsFormat.SIMILARITY_FUNCTIONS.indexOf(fieldInfo.getVectorSimilarityFunction()));
    meta.writeVInt(GpuVectorsFormat.ELEMENT_TYPES.indexOf(elementType));
    meta.writeVInt(fieldInfo.getVectorDimension());
    meta.writeInt(count);
    meta.writeVLong(dataOffset);
    meta.writeVLong(dataLength);
  }

  @Override
  public void finish() throws IOException {
    if (finished) {
      throw new IllegalStateException("already finished");
    }
    finished = true;
    flatWriters.finish();
    meta.writeInt(GpuVectorsFormat.END_OF_FIELDS);
    CodecUtil.writeFooter(meta);
    CodecUtil.writeFooter(data);
  }

  @Override
  public long ramBytesUsed() {
    return SHALLOW_RAM_BYTES_USED
        + flatWriters.ramBytesUsed()
        + fields.size() * RamUsageEstimator.shallowSizeOfInstance(FieldWriter.class);
  }

  @Override
  public void close() throws IOException {
    IOUtils.close(meta, data, flatWriters);
  }

  /** Refuses every value of a field whose index type cannot be written. */
  private static final class RejectingFieldVectorsWriter<T> extends KnnFieldVectorsWriter<T> {
    private final KnnFieldVectorsWriter<T> in;
    private final String message;

    RejectingFieldVectorsWriter(KnnFieldVectorsWriter<T> in, String message) {
      this.in = in;
      this.message = message;
    }

    @Override
    public void addValue(int docID, T vectorValue) {
      throw new IllegalArgumentException(message);
    }

    @Override
    public T copyValue(T vectorValue) {
      return in.copyValue(vectorValue);
    }

    @Override
    public long ramBytesUsed() {
      return in.ramBytesUsed();
    }
  }

  /** A field being buffered: the flat writer holds the vectors, we keep what the meta needs. */
  private record FieldWriter(
      FieldInfo fieldInfo, IndexType indexType, ElementType elementType, FlatFieldVectorsWriter<?> flatFieldWriter) {}
}
