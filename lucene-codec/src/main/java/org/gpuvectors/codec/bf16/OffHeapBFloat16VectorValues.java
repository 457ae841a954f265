package org.gpuvectors.codec.bf16;

import java.io.IOException;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.codecs.lucene90.IndexedDISI;
import org.apache.lucene.codecs.lucene95.OrdToDocDISIReaderConfiguration;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.search.VectorScorer;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.hnsw.RandomVectorScorer;
import org.apache.lucene.util.packed.DirectMonotonicReader;

/**
 * One field's bfloat16 vectors read from the data file on demand and handed out decoded, as floats.
 * Like Lucene's off-heap values, {@link #vectorValue} returns one array per instance, overwritten by
 * the next call: callers that keep a vector copy it, and callers on other threads use {@link #copy()}.
 *
 * <p>Deliberately not a {@code HasIndexSlice}: Lucene's vectorized scorers read raw float32 bytes
 * from such slices, which would misread bfloat16 data; without it every scorer goes through {@link
 * #vectorValue}.
 */
abstract class OffHeapBFloat16VectorValues extends FloatVectorValues {

  final int dimension;
  final int size;
  final IndexInput slice;
  final FlatVectorsScorer vectorsScorer;
  final VectorSimilarityFunction similarity;
  private final byte[] encoded;
  private final float[] value;
  private int lastOrd = -1;

  private OffHeapBFloat16VectorValues(
      int dimension, int size, IndexInput slice, FlatVectorsScorer vectorsScorer, VectorSimilarityFunction similarity) {
    this.dimension = dimension;
    this.size = size;
    this.slice = slice;
    this.vectorsScorer = vectorsScorer;
    this.similarity = similarity;
    this.encoded = new byte[dimension * BFloat16.BYTES];
    this.value = new float[dimension];
  }

  /**
   * The values of a field whose vectors lie at {@code [offset, offset + length)} of {@code vectorData} and whose
   * documents {@code ordToDoc} describes.
   */
  static OffHeapBFloat16VectorValues load(
      OrdToDocDISIReaderConfiguration ordToDoc,
      int dimension,
      int size,
      long offset,
      long length,
      IndexInput vectorData,
      FlatVectorsScorer vectorsScorer,
      VectorSimilarityFunction similarity)
      throws IOException {
    if (ordToDoc.isEmpty()) {
      return new Empty(dimension, vectorsScorer, similarity);
    }
    IndexInput slice = vectorData.slice("bfloat16-vector-data", offset, length);
    if (ordToDoc.isDense()) {
      return new Dense(dimension, size, slice, vectorsScorer, similarity);
    }
    return new Sparse(ordToDoc, vectorData, dimension, size, slice, vectorsScorer, similarity);
  }

  @Override
  public int dimension() {
    return dimension;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public float[] vectorValue(int ord) throws IOException {
    if (ord != lastOrd) {
      slice.seek((long) ord * encoded.length);
      slice.readBytes(encoded, 0, encoded.length);
      BFloat16.decode(encoded, value);
      lastOrd = ord;
    }
    return value;
  }

  @Override
  public abstract OffHeapBFloat16VectorValues copy() throws IOException;

  /** Whether ordinals are doc ids (every document has a vector), which picks the bulk scorer. */
  abstract boolean dense();

  @Override
  public VectorScorer scorer(float[] query) throws IOException {
    // a copy of its own: the scorer moves its iterator and reads vectors independently of this instance
    OffHeapBFloat16VectorValues values = copy();
    DocIndexIterator iterator = values.iterator();
    RandomVectorScorer randomScorer = vectorsScorer.getRandomVectorScorer(similarity, values, query);
    boolean dense = dense();
    return new VectorScorer() {
      @Override
      public float score() throws IOException {
        return randomScorer.score(iterator.index());
      }

      @Override
      public DocIdSetIterator iterator() {
        return iterator;
      }

      @Override
      public Bulk bulk(DocIdSetIterator matchingDocs) {
        return dense
            ? Bulk.fromRandomScorerDense(randomScorer, iterator, matchingDocs)
            : Bulk.fromRandomScorerSparse(randomScorer, iterator, matchingDocs);
      }
    };
  }

  /** Every document of the segment has a vector: ordinal and doc id are the same. */
  private static final class Dense extends OffHeapBFloat16VectorValues {

    Dense(int dimension, int size, IndexInput slice, FlatVectorsScorer scorer, VectorSimilarityFunction similarity) {
      super(dimension, size, slice, scorer, similarity);
    }

    @Override
    public Dense copy() {
      return new Dense(dimension, size, slice.clone(), vectorsScorer, similarity);
    }

    @Override
    boolean dense() {
      return true;
    }

    @Override
    public int ordToDoc(int ord) {
      return ord;
    }

    @Override
    public Bits getAcceptOrds(Bits acceptDocs) {
      return acceptDocs;
    }

    @Override
    public DocIndexIterator iterator() {
      return createDenseIterator();
    }
  }

  /** Some documents lack a vector: ordinals map to doc ids through the structures in the data file. */
  private static final class Sparse extends OffHeapBFloat16VectorValues {

    private final OrdToDocDISIReaderConfiguration configuration;
    private final IndexInput vectorData;
    private final DirectMonotonicReader ordToDoc;
    private final IndexedDISI docsWithVector;

    Sparse(
        OrdToDocDISIReaderConfiguration configuration,
        IndexInput vectorData,
        int dimension,
        int size,
        IndexInput slice,
        FlatVectorsScorer scorer,
        VectorSimilarityFunction similarity)
        throws IOException {
      super(dimension, size, slice, scorer, similarity);
      this.configuration = configuration;
      this.vectorData = vectorData;
      this.ordToDoc = configuration.getDirectMonotonicReader(vectorData);
      this.docsWithVector = configuration.getIndexedDISI(vectorData);
    }

    @Override
    public Sparse copy() throws IOException {
      return new Sparse(configuration, vectorData, dimension, size, slice.clone(), vectorsScorer, similarity);
    }

    @Override
    boolean dense() {
      return false;
    }

    @Override
    public int ordToDoc(int ord) {
      return (int) ordToDoc.get(ord);
    }

    @Override
    public Bits getAcceptOrds(Bits acceptDocs) {
      if (acceptDocs == null) {
        return null;
      }
      return new Bits() {
        @Override
        public boolean get(int ord) {
          return acceptDocs.get(ordToDoc(ord));
        }

        @Override
        public int length() {
          return size;
        }
      };
    }

    @Override
    public DocIndexIterator iterator() {
      return IndexedDISI.asDocIndexIterator(docsWithVector);
    }
  }

  /** No document of the segment has a vector. */
  private static final class Empty extends OffHeapBFloat16VectorValues {

    Empty(int dimension, FlatVectorsScorer scorer, VectorSimilarityFunction similarity) {
      super(dimension, 0, null, scorer, similarity);
    }

    @Override
    public Empty copy() {
      return this; // nothing to read, nothing to share
    }

    @Override
    boolean dense() {
      return true;
    }

    @Override
    public float[] vectorValue(int ord) {
      throw new IllegalArgumentException("no vectors: ordinal " + ord + " does not exist");
    }

    @Override
    public DocIndexIterator iterator() {
      return createDenseIterator();
    }

    @Override
    public Bits getAcceptOrds(Bits acceptDocs) {
      return null;
    }

    @Override
    public VectorScorer scorer(float[] query) {
      return null;
    }
  }
}
