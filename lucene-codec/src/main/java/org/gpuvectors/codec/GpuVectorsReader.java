package org.gpuvectors.codec;

import org.gpuvectors.codec.gpu.ElementVectors;
import org.gpuvectors.codec.gpu.GpuSearchService;
import org.gpuvectors.codec.gpu.GpuSearchServices;
import org.gpuvectors.codec.gpu.GpuSegment;
import org.gpuvectors.codec.graph.GraphField;
import org.gpuvectors.codec.index.ApproximateIndex;
import org.gpuvectors.codec.index.ElementType;
import org.gpuvectors.codec.index.FloatView;
import org.gpuvectors.codec.index.FloatViewScorer;
import org.gpuvectors.codec.index.FloatViewVectors;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.ivf.IvfField;
import org.gpuvectors.codec.ivf.IvfPqField;
import org.gpuvectors.cuda.SearchParams;
import java.io.IOException;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.apache.lucene.codecs.CodecUtil;
import org.apache.lucene.codecs.KnnVectorsReader;
import org.apache.lucene.codecs.hnsw.FlatVectorsReader;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.CorruptIndexException;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.FieldInfos;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.IndexFileNames;
import org.apache.lucene.index.SegmentReadState;
import org.apache.lucene.index.VectorEncoding;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.KnnCollector;
import org.apache.lucene.store.ChecksumIndexInput;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.util.Accountable;
import org.apache.lucene.util.IOUtils;
import org.apache.lucene.util.RamUsageEstimator;

/**
 * Reads the {@link GpuVectorsFormat} files of a segment, the counterpart of {@link GpuVectorsWriter}: one {@link
 * FieldEntry} per field, read from the meta file, holds the field's approximate structure read from the data file.
 * Raw vectors come from the wrapped flat vectors reader. Searches run on the GPU through the node's {@link GpuSearchService} ({@link
 * GpuSegmentSearcher}) when it can serve them, else on the CPU: exactly ({@link FlatExactSearcher})
 * for flat fields, over the nearest inverted lists for IVF fields ({@link IvfField}, {@link
 * IvfPqField}), by beam search for graph fields ({@link GraphField}). As a {@link GpuSegment} it tells the
 * service which index it belongs to and which vectors its unfiltered searches accept, so one GPU pass
 * can serve a query's segments.
 *
 * <p>Each field's raw vectors come from the flat reader of its element type ({@link FlatReaders}). Byte and bit
 * fields with an approximate structure are searched in their float view ({@link FloatViewVectors}: the structure was
 * built there), every candidate scored by the element type's own scorer ({@link FloatViewScorer}), so the scores are
 * those of {@code dense_vector}: on the GPU, the float structures are resident in that view and every candidate the
 * device returns is scored again here by that scorer; flat byte, bit and bfloat16 fields are resident at their own
 * size ({@link ElementVectors}).
 */
final class GpuVectorsReader extends KnnVectorsReader implements Accountable, GpuSegment {

  private static final long SHALLOW_SIZE =
      RamUsageEstimator.shallowSizeOfInstance(GpuVectorsReader.class);

  private final FlatReaders flatReaders;
  /** Each field's entry: its meta and its approximate structure in this segment. */
  private final Map<String, FieldEntry> fields = new HashMap<>();
  private final IndexInput data;
  /** Accept masks of this segment's fields (the live-docs mask is built once per deletion generation). */
  private final AcceptMasks acceptMasks = new AcceptMasks();
  // per flat float field, the largest norm of its vectors here: the compact copy's bound (computed once, when first
  // searched in its copy)
  private final Map<String, Double> maxNorms = new java.util.concurrent.ConcurrentHashMap<>();
  /** The index's directory: segments that share it are searched together ({@link GpuSegment}). */
  private final Object group;
  private final int maxDoc;

  GpuVectorsReader(SegmentReadState state, FlatFormats flatFormats)
      throws IOException {
    this.group = state.segmentInfo.dir; // the real directory, also for compound-file segments
    this.maxDoc = state.segmentInfo.maxDoc();
    boolean success = false;
    String metaFileName =
        IndexFileNames.segmentFileName(
            state.segmentInfo.name, state.segmentSuffix, GpuVectorsFormat.META_EXTENSION);
    int versionMeta = -1;
    // the meta entries, completed with their structures once the data file is open
    Map<String, FieldEntry> metaEntries = new HashMap<>();
    IndexInput dataIn = null;
    FlatReaders flats = null;
    try {
      try (ChecksumIndexInput meta = state.directory.openChecksumInput(metaFileName)) {
        Throwable priorE = null;
        try {
          versionMeta =
              CodecUtil.checkIndexHeader(
                  meta,
                  GpuVectorsFormat.META_CODEC_NAME,
                  GpuVectorsFormat.VERSION_START,
                  GpuVectorsFormat.VERSION_CURRENT,
                  state.segmentInfo.getId(),
                  state.segmentSuffix);
          readFields(meta, versionMeta, state.fieldInfos, metaEntries);
        } catch (Throwable exception) {
          priorE = exception;
        } finally {
          CodecUtil.checkFooter(meta, priorE);
        }
      }
      Set<ElementType> elementTypes = EnumSet.noneOf(ElementType.class);
      metaEntries.values().forEach(e -> elementTypes.add(e.elementType()));
      flats = FlatReaders.open(flatFormats, state, elementTypes);
      dataIn = openDataInput(state, versionMeta);
      for (Map.Entry<String, FieldEntry> e : metaEntries.entrySet()) {
        fields.put(e.getKey(), e.getValue().withStructure(e.getKey(), dataIn));
      }
      success = true;
    } finally {
      if (success == false) {
        IOUtils.closeWhileHandlingException(dataIn, flats);
      }
    }
    this.data = dataIn;
    this.flatReaders = flats;
  }

  private static IndexInput openDataInput(SegmentReadState state, int versionMeta)
      throws IOException {
    String fileName =
        IndexFileNames.segmentFileName(
            state.segmentInfo.name, state.segmentSuffix, GpuVectorsFormat.DATA_EXTENSION);
    IndexInput in = state.directory.openInput(fileName, state.context);
    boolean success = false;
    try {
      int versionData =
          CodecUtil.checkIndexHeader(
              in,
              GpuVectorsFormat.DATA_CODEC_NAME,
              GpuVectorsFormat.VERSION_START,
              GpuVectorsFormat.VERSION_CURRENT,
              state.segmentInfo.getId(),
              state.segmentSuffix);
      if (versionMeta != versionData) {
        throw new CorruptIndexException(
            "Format versions mismatch: meta=" + versionMeta + ", data=" + versionData, in);
      }
      // cheap structural check of the footer; checkIntegrity() verifies the whole checksum
      CodecUtil.retrieveChecksum(in);
      success = true;
      return in;
    } finally {
      if (success == false) {
        IOUtils.closeWhileHandlingException(in);
      }
    }
  }

  private static void readFields(
      ChecksumIndexInput meta, int version, FieldInfos infos, Map<String, FieldEntry> entries) throws IOException {
    for (int fieldNumber = meta.readInt();
        fieldNumber != GpuVectorsFormat.END_OF_FIELDS;
        fieldNumber = meta.readInt()) {
      FieldInfo info = infos.fieldInfo(fieldNumber);
      if (info == null) {
        throw new CorruptIndexException("Invalid field number: " + fieldNumber, meta);
      }
      FieldEntry entry = FieldEntry.create(meta, version, info);
      if (entries.put(info.name, entry) != null) {
        throw new CorruptIndexException("Duplicate field: " + info.name, meta);
      }
    }
  }

  @Override
  public Object group() {
    return group;
  }

  @Override
  public int maxDoc() {
    return maxDoc;
  }

  @Override
  public GpuSegment.Standing standing(String field) {
    return acceptMasks.standing(field);
  }

  /** The field's {@code ivf_flat} lists in this segment, or null (other types, or a segment below the threshold). */
  IvfField ivfField(String field) {
    return approximate(field) instanceof IvfField lists ? lists : null;
  }

  /** The field's {@code ivf_pq} index in this segment, or null (other types, or a segment below the threshold). */
  IvfPqField ivfPqField(String field) {
    return approximate(field) instanceof IvfPqField pq ? pq : null;
  }

  /** The field's graph in this segment, or null (other types, or a segment below the threshold). */
  GraphField graphField(String field) {
    return approximate(field) instanceof GraphField graph ? graph : null;
  }

  /**
   * How the field's vectors are scored, given them or their float view (a merge's walks of this segment's graph
   * score so): the flat format's scorer of the field's element type ({@link FloatViewScorer}).
   */
  FlatVectorsScorer viewScorer(String field) throws IOException {
    return new FloatViewScorer(flat(field).getFlatVectorScorer(field));
  }

  /** The element type of the field's vectors in this segment (float for a field without vectors here). */
  ElementType elementType(String field) {
    FieldEntry entry = fields.get(field);
    return entry == null ? ElementType.FLOAT : entry.elementType();
  }

  /**
   * The field's vectors as floats: float and bfloat16 vectors as they are, byte and bit vectors in their float view
   * ({@link FloatViewVectors}), what the field's structure was built in and what the GPU's float kernels can take;
   * {@link #viewScorer} scores them as the element type does.
   */
  FloatVectorValues floatView(String field) throws IOException {
    ElementType type = elementType(field);
    return type.encoding() == VectorEncoding.FLOAT32
        ? flat(field).getFloatVectorValues(field)
        : FloatViewVectors.of(flat(field).getByteVectorValues(field), type);
  }

  /** The flat reader of the field's element type (the float-and-byte one for fields without an entry). */
  private FlatVectorsReader flat(String field) {
    FieldEntry entry = fields.get(field);
    return flatReaders.of(entry == null ? ElementType.FLOAT : entry.elementType());
  }

  /**
   * A field's vectors as floats, through any vectors reader: float and bfloat16 vectors as they are, byte and bit
   * vectors in their float view ({@link FloatView}); null where the reader has none.
   */
  static FloatVectorValues floatView(KnnVectorsReader reader, FieldInfo info) throws IOException {
    ElementType type = GpuVectorsFormat.elementType(info);
    if (type.encoding() == VectorEncoding.FLOAT32) {
      return reader.getFloatVectorValues(info.name);
    }
    ByteVectorValues bytes = reader.getByteVectorValues(info.name);
    return bytes == null ? null : FloatViewVectors.of(bytes, type);
  }

  /** The field's approximate structure in this segment (IVF lists or a graph), or null (flat here). */
  private ApproximateIndex approximate(String field) {
    FieldEntry entry = fields.get(field);
    return entry == null ? null : entry.approximate();
  }

  @Override
  public int deviceK(String field, int k, boolean rerankOnGpu) {
    FieldEntry entry = fields.get(field);
    return entry == null
        ? k
        : GpuSegmentSearcher.deviceK(entry.approximate(), k, standingCount(field, entry), rerankOnGpu);
  }

  @Override
  public int rerankCandidates(String field, int k) {
    FieldEntry entry = fields.get(field);
    return entry != null && entry.approximate() instanceof IvfPqField pq
        ? IvfPqField.rerankCandidates(pq.rerankFactor(), k)
        : k;
  }

  /**
   * The vectors an unfiltered search of the field accepts now (the live ones, by the cached live-docs
   * mask): what its own search would count, so that a search run ahead for it has the same effort.
   */
  private long standingCount(String field, FieldEntry entry) {
    long[] live = acceptMasks.standing(field).mask();
    return live == null ? entry.size() : AcceptMasks.countBelow(live, entry.size());
  }

  @Override
  public SearchParams searchParams(String field, int k) {
    FieldEntry entry = fields.get(field);
    if (entry == null) {
      return SearchParams.FLAT;
    }
    int effort = GpuSegmentSearcher.effort(entry.approximate(), k, standingCount(field, entry));
    return GpuSegmentSearcher.searchParams(entry.approximate(), effort);
  }

  @Override
  public void checkIntegrity() throws IOException {
    flatReaders.checkIntegrity();
    CodecUtil.checksumEntireFile(data);
  }

  @Override
  public FloatVectorValues getFloatVectorValues(String field) throws IOException {
    return flat(field).getFloatVectorValues(field);
  }

  @Override
  public ByteVectorValues getByteVectorValues(String field) throws IOException {
    return flat(field).getByteVectorValues(field);
  }

  /**
   * Searches one float query: on the GPU when one can serve it (batched there with concurrent
   * searches), else on the CPU. Many queries at once go through {@link KnnBatchSearcher}.
   */
  @Override
  public void search(String field, float[] target, KnnCollector knnCollector, AcceptDocs acceptDocs)
      throws IOException {
    FieldEntry entry = searchable(field, VectorEncoding.FLOAT32, knnCollector);
    if (entry == null) {
      return;
    }
    FloatVectorValues vectors = flat(field).getFloatVectorValues(field);
    GpuSearchService service = GpuSearchServices.current();
    if (isFlatBf16(entry)) {
      // uploaded at its own two bytes a dimension, not through the float path's four
      if (GpuSegmentSearcher.searchBf16(service, this, field, vectors, entry.similarityFunction(),
          target, knnCollector, acceptDocs, acceptMasks)) {
        return;
      }
    } else if (isFlatFloat(entry) && service.flatCompactCopy(this, field, vectors, entry.similarityFunction())) {
      // resident (or to be) as its compact copy: candidates there, re-ranked and proven here
      if (GpuSegmentSearcher.searchCompactCopy(service, this, field, vectors, entry.similarityFunction(),
          flat(field).getFlatVectorScorer(field), maxNorm(field), target, knnCollector, acceptDocs, acceptMasks)) {
        return;
      }
    } else if (GpuSegmentSearcher.search(
        service,
        this,
        field,
        vectors,
        entry.similarityFunction(),
        entry.approximate(),
        flat(field).getFlatVectorScorer(field),
        target,
        knnCollector,
        acceptDocs,
        acceptMasks)) {
      return;
    }
    searchOnCpu(field, entry, vectors, new float[][] {target}, new KnnCollector[] {knnCollector}, acceptDocs);
  }

  /** The CPU path: the field's lists when it has them, else exact search. */
  private void searchOnCpu(
      String field, FieldEntry entry, FloatVectorValues vectors, float[][] targets, KnnCollector[] collectors,
      AcceptDocs acceptDocs) throws IOException {
    ApproximateIndex index = entry.approximate();
    if (index == null) {
      searcher(field, entry).search(vectors, targets, collectors, acceptDocs);
      return;
    }
    FlatVectorsScorer scorers = flat(field).getFlatVectorScorer(field);
    // the accepted count as the GPU path counts it (its effort must be the same): the mask's, once per
    // batch (live docs: cached per segment)
    long accepted = acceptMasks.of(field, acceptDocs, vectors).count();
    for (int q = 0; q < targets.length; q++) {
      index.search(scorers, entry.similarityFunction(), vectors, targets[q], collectors[q], acceptDocs, accepted);
    }
  }

  /**
   * The GPU share of a batch over this segment, prepared for a pass that serves several segments
   * ({@link KnnBatchSearcher}); null when there is nothing to search here or the CPU must run it
   * ({@link #searchBatchOnCpu}).
   */
  GpuSegmentSearcher.Prepared prepareBatch(
      GpuSearchService service, String field, float[][] targets, int k, AcceptDocs acceptDocs)
      throws IOException {
    FieldEntry entry = targets.length == 0 ? null : searchable(field, VectorEncoding.FLOAT32, k);
    if (entry == null) {
      return null;
    }
    FloatVectorValues vectors = flat(field).getFloatVectorValues(field);
    GpuSegmentSearcher.Prepared prepared = GpuSegmentSearcher.prepare(
        service,
        this,
        field,
        vectors,
        entry.similarityFunction(),
        entry.approximate(),
        flat(field).getFlatVectorScorer(field),
        targets,
        k,
        Integer.MAX_VALUE, // the batch API's collectors have no visit limit
        acceptDocs,
        acceptMasks);
    // a flat bfloat16 field is resident at its own two bytes a dimension, as its single searches find it
    if (prepared != null && isFlatBf16(entry)) {
      return prepared.atOwnSize(new ElementVectors(ElementType.BFLOAT16, vectors));
    }
    if (prepared != null && isFlatFloat(entry)
        && service.flatCompactCopy(this, field, vectors, entry.similarityFunction())) {
      return prepared.atCompactCopy(); // candidates in its compact copy, re-ranked and proven by the batch
    }
    return prepared;
  }

  /**
   * The GPU share of a batch of byte or bit queries over this segment, for a field with an approximate structure:
   * prepared in the float view the structure was built in, every candidate scored by the element type's scorer, as
   * {@link #search(String, byte[], KnnCollector, AcceptDocs)} prepares one query. Null when there is nothing to
   * search here, the field is flat here, or the CPU must run it ({@link #searchByteBatch}).
   */
  GpuSegmentSearcher.Prepared prepareByteBatch(
      GpuSearchService service, String field, byte[][] targets, int k, AcceptDocs acceptDocs) throws IOException {
    FieldEntry entry = targets.length == 0 ? null : searchable(field, VectorEncoding.BYTE, k);
    if (entry == null || entry.approximate() == null) {
      return null;
    }
    FloatViewVectors view = FloatViewVectors.of(flat(field).getByteVectorValues(field), entry.elementType());
    float[][] viewTargets = new float[targets.length][];
    for (int q = 0; q < targets.length; q++) {
      viewTargets[q] = FloatView.toFloats(entry.elementType(), targets[q]);
    }
    return GpuSegmentSearcher.prepare(service, this, field, view, entry.similarityFunction(), entry.approximate(),
        viewScorer(field), viewTargets, k, Integer.MAX_VALUE, acceptDocs, acceptMasks);
  }

  /**
   * A batch of byte or bit queries over this segment one query at a time, each as {@link #search(String, byte[],
   * KnnCollector, AcceptDocs)} searches it: a flat field exactly (on the GPU at the element type's size when one can
   * serve it), a field with a structure through it (on the GPU when one can serve it, else on the CPU).
   */
  void searchByteBatch(String field, byte[][] targets, KnnCollector[] collectors, AcceptDocs acceptDocs)
      throws IOException {
    for (int q = 0; q < targets.length; q++) {
      search(field, targets[q], collectors[q], acceptDocs);
    }
  }

  /**
   * The largest norm of a flat float field's vectors in this segment (the compact copy's bound, {@link
   * CompactCopyBound}), read once; widened by a float sum's rounding. 0 for a cosine field, whose bound needs none.
   */
  double maxNorm(String field) throws IOException {
    if (fields.get(field).similarityFunction() == VectorSimilarityFunction.COSINE) {
      return 0;
    }
    Double known = maxNorms.get(field);
    if (known != null) {
      return known;
    }
    FloatVectorValues vectors = flat(field).getFloatVectorValues(field).copy();
    double max = 0;
    for (int ord = 0; ord < vectors.size(); ord++) {
      max = Math.max(max, CompactCopyBound.norm(vectors.vectorValue(ord)));
    }
    double norm = max * (1 + CompactCopyBound.sumError(vectors.dimension()));
    maxNorms.put(field, norm);
    return norm;
  }

  /** A batch over this segment on the CPU (what {@link #search} does when the GPU cannot). */
  void searchBatchOnCpu(
      String field, float[][] targets, KnnCollector[] collectors, AcceptDocs acceptDocs)
      throws IOException {
    FieldEntry entry = targets.length == 0 ? null : searchable(field, VectorEncoding.FLOAT32, collectors[0]);
    if (entry != null) {
      searchOnCpu(field, entry, flat(field).getFloatVectorValues(field), targets, collectors, acceptDocs);
    }
  }

  /**
   * Makes {@code field}'s vectors resident on the service's GPU ahead of the first search.
   *
   * @return whether the field is resident (false: not ours, empty, or no GPU room)
   */
  boolean warm(String field, GpuSearchService service) throws IOException {
    return warm(field, service, false, false);
  }

  /**
   * Device bytes {@code field} takes whole when it is a flat float field not resident yet (else 0): the warm-up's
   * sum over an index ({@link GpuWarmup}).
   */
  long flatWholeBytes(String field, GpuSearchService service) throws IOException {
    FieldEntry entry = fields.get(field);
    if (entry == null || entry.size() == 0 || isFlatFloat(entry) == false || service.isResident(this, field)) {
      return 0;
    }
    return service.flatWholeBytes(flat(field).getFloatVectorValues(field), entry.similarityFunction());
  }

  /**
   * Device bytes {@code field}'s ivf_pq structure takes, with its raw vectors ({@code rawVectors}, where the service
   * re-ranks on the device at all) or as its codes alone, when it is not resident yet (else 0, and 0 for other
   * fields): the warm-up's sums over an index ({@link GpuWarmup}).
   */
  long ivfPqBytes(String field, GpuSearchService service, boolean rawVectors) throws IOException {
    FieldEntry entry = fields.get(field);
    if (entry == null || entry.size() == 0 || entry.approximate() instanceof IvfPqField == false
        || service.isResident(this, field)) {
      return 0;
    }
    boolean withRaw = rawVectors && service.settings().ivfPqRerankOnGpu();
    return service.structureBytes(floatView(field), entry.similarityFunction(),
        GpuSegmentSearcher.gpuStructure(entry.approximate(), withRaw));
  }

  /**
   * {@link #warm(String, GpuSearchService)}, a field that is not resident yet going up in the form the warm-up
   * planned for its index: a flat float field as its compact copy when {@code compactFlat}, an ivf_pq field as its
   * codes alone when {@code ivfPqCodes} (the index too large for the free budget in the larger forms).
   */
  boolean warm(String field, GpuSearchService service, boolean compactFlat, boolean ivfPqCodes) throws IOException {
    boolean compact = compactFlat;
    FieldEntry entry = fields.get(field);
    if (entry == null || entry.size() == 0) {
      return false;
    }
    if (entry.approximate() == null && entry.elementType() != ElementType.FLOAT) {
      ElementVectors vectors = entry.vectorEncoding() == VectorEncoding.BYTE
          ? new ElementVectors(entry.elementType(), flat(field).getByteVectorValues(field))
          : new ElementVectors(entry.elementType(), flat(field).getFloatVectorValues(field));
      return service.warmElements(this, field, vectors, entry.similarityFunction());
    }
    if (isFlatFloat(entry)) {
      FloatVectorValues floats = flat(field).getFloatVectorValues(field);
      boolean resident = service.isResident(this, field);
      if ((compact && resident == false) || service.flatCompactCopy(this, field, floats, entry.similarityFunction())) {
        return service.warmElements(
            this, field, new ElementVectors(ElementType.FLOAT, floats), entry.similarityFunction());
      }
    }
    FloatVectorValues vectors = floatView(field); // byte and bit structures: in the float view they were built in
    boolean rerankOnGpu = (ivfPqCodes && service.isResident(this, field) == false)
        ? false
        : GpuSegmentSearcher.rerankOnGpu(service, this, field, vectors, entry.similarityFunction(), entry.approximate());
    return service.warm(
        this, field, vectors, entry.similarityFunction(),
        GpuSegmentSearcher.gpuStructure(entry.approximate(), rerankOnGpu));
  }

  /**
   * Searches one byte or bit query: exactly for a flat field (on the GPU at the type's own size when one can serve
   * it), else through the field's structure in the float view (on the GPU when one can serve it, batched there with
   * concurrent searches), every candidate scored by the element type's scorer; on the CPU otherwise.
   */
  @Override
  public void search(String field, byte[] target, KnnCollector knnCollector, AcceptDocs acceptDocs)
      throws IOException {
    FieldEntry entry = searchable(field, VectorEncoding.BYTE, knnCollector);
    if (entry == null) {
      return;
    }
    ByteVectorValues vectors = flat(field).getByteVectorValues(field);
    ApproximateIndex index = entry.approximate();
    if (index == null) {
      if (GpuSegmentSearcher.searchBytes(GpuSearchServices.current(), this, field, entry.elementType(), vectors,
          entry.similarityFunction(), target, knnCollector, acceptDocs, acceptMasks)) {
        return;
      }
      searcher(field, entry).search(vectors, target, knnCollector, acceptDocs);
      return;
    }
    FloatViewVectors view = FloatViewVectors.of(vectors, entry.elementType());
    float[] viewTarget = FloatView.toFloats(entry.elementType(), target);
    FlatVectorsScorer scorer = viewScorer(field);
    if (GpuSegmentSearcher.search(GpuSearchServices.current(), this, field, view, entry.similarityFunction(), index,
        scorer, viewTarget, knnCollector, acceptDocs, acceptMasks)) {
      return;
    }
    // counted as the float searches count it, so that the effort is the same for the same accepted vectors
    long accepted = acceptMasks.of(field, acceptDocs, view).count();
    index.search(scorer, entry.similarityFunction(), view, viewTarget, knnCollector, acceptDocs, accepted);
  }

  /** A flat float field: searched on the GPU whole or, past the budget, in its compact copy. */
  private static boolean isFlatFloat(FieldEntry entry) {
    return entry.elementType() == ElementType.FLOAT && entry.approximate() == null;
  }

  /** A flat bfloat16 field: searched on the GPU at its own size (its structures go through the float path). */
  private static boolean isFlatBf16(FieldEntry entry) {
    return entry.elementType() == ElementType.BFLOAT16 && entry.approximate() == null;
  }

  /** The field's entry, or null if there is nothing to search (as Lucene's readers do). */
  private FieldEntry searchable(String field, VectorEncoding encoding, KnnCollector knnCollector) {
    return searchable(field, encoding, knnCollector.k());
  }

  private FieldEntry searchable(String field, VectorEncoding encoding, int k) {
    FieldEntry entry = fields.get(field);
    if (entry == null
        || entry.size() == 0
        || k == 0
        || entry.vectorEncoding() != encoding) {
      return null;
    }
    return entry;
  }

  private FlatExactSearcher searcher(String field, FieldEntry entry) throws IOException {
    return new FlatExactSearcher(
        flat(field).getFlatVectorScorer(field), entry.similarityFunction());
  }

  @Override
  public Map<String, Long> getOffHeapByteSize(FieldInfo fieldInfo) {
    Map<String, Long> raw = flat(fieldInfo.name).getOffHeapByteSize(fieldInfo);
    FieldEntry entry = fields.get(fieldInfo.name);
    if (entry == null || entry.dataLength() == 0) {
      return raw;
    }
    return KnnVectorsReader.mergeOffHeapByteSizeMaps(
        raw, Map.of(GpuVectorsFormat.DATA_EXTENSION, entry.dataLength()));
  }

  @Override
  public long ramBytesUsed() {
    return SHALLOW_SIZE
        + RamUsageEstimator.sizeOfMap(
            fields, RamUsageEstimator.shallowSizeOfInstance(FieldEntry.class))
        + flatReaders.ramBytesUsed()
        + acceptMasks.ramBytesUsed()
        + fields.values().stream()
            .map(FieldEntry::approximate)
            .filter(Objects::nonNull)
            .mapToLong(ApproximateIndex::ramBytesUsed)
            .sum();
  }

  @Override
  public void close() throws IOException {
    try {
      GpuSearchServices.releaseSegment(this);
    } finally {
      IOUtils.close(flatReaders, data);
    }
  }

  /**
   * One field of the segment: its entry of the meta file (written by {@code GpuVectorsWriter#writeMeta}) and the
   * approximate structure its range of the data file holds.
   *
   * @param indexType the structure this segment holds, {@link IndexType#FLAT} for a segment below the threshold
   * @param approximate the field's IVF lists ({@link IvfField}, {@link IvfPqField}) or graph ({@link GraphField}),
   *     read by {@link #withStructure}; null for a flat field
   */
  record FieldEntry(
      IndexType indexType,
      ElementType elementType,
      VectorEncoding vectorEncoding,
      VectorSimilarityFunction similarityFunction,
      int dimension,
      int size,
      long dataOffset,
      long dataLength,
      ApproximateIndex approximate) {

    /**
     * Reads the entry that follows the field number, cross-checking it against {@code info}; its structure is
     * read once the data file is open ({@link #withStructure}), the meta file being read and checked first.
     */
    static FieldEntry create(IndexInput meta, int version, FieldInfo info) throws IOException {
      int typeCode = meta.readVInt();
      final IndexType indexType;
      try {
        indexType = IndexType.fromCode(typeCode);
      } catch (IllegalArgumentException e) {
        throw new CorruptIndexException("Invalid index type code: " + typeCode, meta, e);
      }
      if (indexType.isImplemented() == false) {
        throw new CorruptIndexException(
            "Index type [" + indexType + "] is not supported by this version", meta);
      }
      int encodingId = meta.readInt();
      if (encodingId < 0 || encodingId >= GpuVectorsFormat.VECTOR_ENCODINGS.size()) {
        throw new CorruptIndexException("Invalid vector encoding id: " + encodingId, meta);
      }
      VectorEncoding encoding = GpuVectorsFormat.VECTOR_ENCODINGS.get(encodingId);
      int similarityId = meta.readInt();
      if (similarityId < 0 || similarityId >= GpuVectorsFormat.SIMILARITY_FUNCTIONS.size()) {
        throw new CorruptIndexException("Invalid similarity function id: " + similarityId, meta);
      }
      VectorSimilarityFunction similarity = GpuVectorsFormat.SIMILARITY_FUNCTIONS.get(similarityId);
      ElementType elementType = ElementType.of(null, encoding);
      if (version >= GpuVectorsFormat.VERSION_ELEMENT_TYPE) {
        int elementTypeId = meta.readVInt();
        if (elementTypeId < 0 || elementTypeId >= GpuVectorsFormat.ELEMENT_TYPES.size()) {
          throw new CorruptIndexException("Invalid element type id: " + elementTypeId, meta);
        }
        elementType = GpuVectorsFormat.ELEMENT_TYPES.get(elementTypeId);
      }
      int dimension = meta.readVInt();
      int size = meta.readInt();
      long dataOffset = meta.readVLong();
      long dataLength = meta.readVLong();

      if (encoding != info.getVectorEncoding()) {
        throw new CorruptIndexException(
            "Inconsistent vector encoding for field=\""
                + info.name
                + "\"; "
                + encoding
                + " != "
                + info.getVectorEncoding(),
            meta);
      }
      if (similarity != info.getVectorSimilarityFunction()) {
        throw new CorruptIndexException(
            "Inconsistent vector similarity function for field=\""
                + info.name
                + "\"; "
                + similarity
                + " != "
                + info.getVectorSimilarityFunction(),
            meta);
      }
      if (dimension != info.getVectorDimension()) {
        throw new CorruptIndexException(
            "Inconsistent vector dimension for field=\""
                + info.name
                + "\"; "
                + dimension
                + " != "
                + info.getVectorDimension(),
            meta);
      }
      if (size < 0) {
        throw new CorruptIndexException("Invalid vector count: " + size, meta);
      }
      ElementType infoType;
      try {
        infoType = GpuVectorsFormat.elementType(info);
      } catch (IllegalArgumentException e) {
        // the writer refused every value of such a field and stored it under its encoding's default
        infoType = ElementType.of(null, encoding);
      }
      if (elementType != infoType) {
        throw new CorruptIndexException(
            "Inconsistent element type for field=\"" + info.name + "\"; " + elementType + " != " + infoType, meta);
      }
      return new FieldEntry(
          indexType, elementType, encoding, similarity, dimension, size, dataOffset, dataLength, null);
    }

    /**
     * This entry with the structure that its range of {@code data} holds, read by the reader of its type (the
     * counterpart of the writer that wrote it: {@link IvfField#read} of {@code IvfLayout#writeTo}, {@link
     * IvfPqField#read} of {@code IvfPqLayout#writeTo}, {@link GraphField#read} of {@code GraphLayout#writeTo}) and
     * checked against the entry: the range within the file, no data for a flat field.
     */
    FieldEntry withStructure(String field, IndexInput data) throws IOException {
      long dataEnd = data.length() - CodecUtil.footerLength();
      if (dataOffset < 0 || dataLength < 0 || dataOffset + dataLength > dataEnd) {
        throw new CorruptIndexException("field [" + field + "] data out of bounds: " + this, data);
      }
      // the structures were built in the vectors' float view: its metric and dimension
      Metric metric = FloatView.metric(elementType, similarityFunction);
      int viewDimension = FloatView.dimension(elementType, dimension);
      ApproximateIndex structure =
          switch (indexType) {
            case IVF_FLAT -> IvfField.read(data, dataOffset, dataLength, viewDimension, size, metric);
            case IVF_PQ -> IvfPqField.read(data, dataOffset, dataLength, viewDimension, size, metric);
            case GRAPH -> GraphField.read(data, dataOffset, dataLength, size);
            case FLAT, PQT -> {
              // (pqt is refused by create: not implemented)
              if (dataLength != 0) {
                throw new CorruptIndexException("flat field [" + field + "] has index data: " + this, data);
              }
              yield null;
            }
          };
      return new FieldEntry(
          indexType, elementType, vectorEncoding, similarityFunction, dimension, size, dataOffset, dataLength,
          structure);
    }
  }
}
