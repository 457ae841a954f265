package org.gpuvectors.codec.graph;

import java.io.IOException;
import java.util.Arrays;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.index.CorruptIndexException;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.KnnCollector;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.RamUsageEstimator;
import org.apache.lucene.util.hnsw.RandomVectorScorer;
import org.gpuvectors.codec.index.ApproximateIndex;

/**
 * One segment field's graph as read from the {@code .gvd} file ({@link GraphLayout#writeTo}), checked
 * when the segment opens, and its CPU search ({@link BeamSearch}). The entry points live on the heap;
 * the adjacency stays in the file (read a row at a time through a clone per search).
 */
public final class GraphField implements ApproximateIndex {
  /**
   * The effort of an exact search of the accepted vectors ({@link #exact}) instead of a walk: above every walk's
   * width, so that efforts compare as the work they ask for.
   */
  public static final int EXACT_EFFORT = Integer.MAX_VALUE;


  private final int size;
  private final int degree;
  private final int buildDegree;
  private final int searchWidth;
  private final long seed;
  private final int[] seeds;
  /** The adjacency, {@code size * degree} int32; cloned for each search (an IndexInput is not shared across threads). */
  private final IndexInput adjacency;
  /** The CPU walks' entry layer ({@link #entryLayer}): built at the first, then kept. */
  private volatile EntryLayer entryLayer;
  /** Whether {@link #entryLayer} was built (it may be null: too few entry points). */
  private volatile boolean entryLayerBuilt;

  private GraphField(int size, int degree, int buildDegree, int searchWidth, long seed, int[] seeds, IndexInput adjacency) {
    this.size = size;
    this.degree = degree;
    this.buildDegree = buildDegree;
    this.searchWidth = searchWidth;
    this.seed = seed;
    this.seeds = seeds;
    this.adjacency = adjacency;
  }

  /**
   * Reads the graph at {@code [offset, offset + length)} of {@code data}, checking it against the
   * field's vector count: parameters in range, lengths exact, seeds distinct and in range, every row
   * free of self loops, duplicates and out-of-range ordinals, -1 padding only at a row's end and only
   * in a segment of at most {@code degree} vectors.
   *
   * @throws CorruptIndexException when any of that does not hold
   */
  public static GraphField read(IndexInput data, long offset, long length, int size) throws IOException {
    IndexInput in = data.slice("graph", offset, length);
    int version = in.readVInt();
    if (version != GraphLayout.VERSION) {
      throw new CorruptIndexException("unknown graph data version " + version, in);
    }
    int degree = in.readVInt();
    int buildDegree = in.readVInt();
    int searchWidth = in.readVInt();
    long seed = in.readLong();
    int seedCount = in.readVInt();
    if (degree < 1 || degree > GraphBuilder.MAX_DEGREE || buildDegree < degree || buildDegree > GraphBuilder.MAX_BUILD_DEGREE) {
      throw new CorruptIndexException("invalid graph degree " + degree + " (build degree " + buildDegree + ")", in);
    }
    if (searchWidth < 1 || searchWidth > GraphBuilder.MAX_SEARCH_WIDTH) {
      throw new CorruptIndexException("invalid graph search width " + searchWidth, in);
    }
    if (size < 1 || seedCount < 1 || seedCount > size) {
      throw new CorruptIndexException("invalid graph entry point count " + seedCount + " for " + size + " vectors", in);
    }
    long expected = 4L * seedCount + 4L * size * degree;
    if (length - in.getFilePointer() != expected) {
      throw new CorruptIndexException(
          "graph data of " + (length - in.getFilePointer()) + " bytes, expected " + expected + " for " + size + " vectors of degree " + degree, in);
    }
    int[] seeds = new int[seedCount];
    in.readInts(seeds, 0, seedCount);
    for (int s = 0; s < seedCount; s++) {
      if (seeds[s] < 0 || seeds[s] >= size || (s > 0 && seeds[s] <= seeds[s - 1])) {
        throw new CorruptIndexException("graph entry point " + s + " = " + seeds[s] + " out of range or out of order (" + size + " vectors)", in);
      }
    }
    long adjacencyStart = in.getFilePointer();
    checkRows(in, size, degree);
    return new GraphField(size, degree, buildDegree, searchWidth, seed, seeds, in.slice("graph adjacency", adjacencyStart, 4L * size * degree));
  }

  /** Reads every row once (at open, as sequential reads) and checks it. */
  private static void checkRows(IndexInput in, int size, int degree) throws IOException {
    int[] row = new int[degree];
    int[] sorted = new int[degree];
    for (int i = 0; i < size; i++) {
      in.readInts(row, 0, degree);
      int filled = 0;
      while (filled < degree && row[filled] >= 0) {
        filled++;
      }
      if (filled < degree && size > degree) {
        throw new CorruptIndexException("graph row " + i + " has " + filled + " of " + degree + " neighbours in a segment of " + size, in);
      }
      for (int p = 0; p < degree; p++) {
        int j = row[p];
        if (p < filled ? (j >= size || j == i) : j != -1) {
          throw new CorruptIndexException("graph row " + i + ": invalid neighbour " + j + " at " + p + " (" + size + " vectors)", in);
        }
      }
      System.arraycopy(row, 0, sorted, 0, filled);
      Arrays.sort(sorted, 0, filled);
      for (int p = 1; p < filled; p++) {
        if (sorted[p] == sorted[p - 1]) {
          throw new CorruptIndexException("graph row " + i + ": duplicate neighbour " + sorted[p], in);
        }
      }
    }
  }

  public int size() {
    return size;
  }

  public int degree() {
    return degree;
  }

  public int buildDegree() {
    return buildDegree;
  }

  /** The beam width a search uses at num_candidates up to it (the mapping's {@code search_width}). */
  public int searchWidth() {
    return searchWidth;
  }

  public long seed() {
    return seed;
  }

  /** The entry points, ascending (a copy). */
  public int[] seeds() {
    return seeds.clone();
  }

  /** The entry points, not a copy (read only). */
  int[] entryPoints() {
    return seeds;
  }

  /**
   * The entry points grouped for the CPU's walks ({@link EntryLayer}), built from the field's vectors at the first call
   * and kept; null when there are too few entry points to group (every CPU walk then scores every entry point, as the
   * GPU does).
   */
  EntryLayer entryLayer(FlatVectorsScorer scorers, VectorSimilarityFunction similarity, FloatVectorValues vectors)
      throws IOException {
    if (!entryLayerBuilt) {
      synchronized (this) {
        if (!entryLayerBuilt) {
          entryLayer = EntryLayer.build(seeds, scorers, similarity, vectors);
          entryLayerBuilt = true;
        }
      }
    }
    return entryLayer;
  }

  /** Heap held: the entry points and their layer once built (the adjacency stays in the file). */
  @Override
  public long ramBytesUsed() {
    EntryLayer layer = entryLayer;
    return RamUsageEstimator.shallowSizeOfInstance(GraphField.class) + RamUsageEstimator.sizeOf(seeds)
        + (layer == null ? 0 : layer.ramBytesUsed());
  }

  /** The whole adjacency ({@code size * degree}, row-major), read from the file: for the GPU and for tests. */
  public int[] toAdjacency() throws IOException {
    int[] all = new int[Math.multiplyExact(size, degree)];
    IndexInput in = adjacency.clone();
    in.seek(0);
    in.readInts(all, 0, all.length);
    return all;
  }

  /** A reader of the adjacency for one search (one thread). */
  IndexInput adjacencyReader() {
    return adjacency.clone();
  }

  /**
   * The beam width of a search for {@code k} results over {@code accepted} accepted vectors: {@code
   * max(search_width, k)}, widened by {@code size / accepted} under a filter (at most {@link
   * GraphFilterPlan#MAX_WIDENING} times), so that about as many accepted vectors enter the beam as
   * without a filter; at most the segment's size, at least k.
   */
  public int width(int k, long accepted) {
    return BeamSearch.width(searchWidth, k, accepted, size);
  }

  /**
   * Whether a search for k over {@code accepted} accepted vectors is exact over them rather than a
   * walk: under a filter that accepts no more vectors than the widened walk may score ({@link
   * GraphFilterPlan#exact}; where Lucene would otherwise end the walk at its visit limit and search
   * exactly itself). The GPU and the CPU decide alike.
   */
  public boolean exact(int k, long accepted) {
    return GraphFilterPlan.exact(searchWidth, k, degree, seeds.length, accepted, size);
  }

  /** The beam's width ({@link #width}), or {@link #EXACT_EFFORT} when the search is {@link #exact}. */
  @Override
  public int effort(int k, long accepted) {
    return exact(k, accepted) ? EXACT_EFFORT : width(k, accepted);
  }

  /**
   * About the vectors a search of this effort scores: the accepted ones (exact), or at most those of
   * a walk of this width ({@link GraphFilterPlan#walkScores}: every entry point, then each of about
   * {@code width} expanded nodes scores its unvisited neighbours; non-accepted nodes are traversed
   * too, so the count does not shrink with a filter).
   */
  @Override
  public long visited(long accepted, int effort) {
    return effort == EXACT_EFFORT ? accepted : GraphFilterPlan.walkScores(effort, degree, seeds.length, size);
  }

  /**
   * Searches one query on the CPU, handing the collector every accepted vector the search scores
   * (the collector keeps the best k), with the field's exact scores: by a walk, or exactly over the
   * accepted vectors under a selective filter ({@link #exact}); honours the accepted documents and
   * the collector's visit limit (it stops once the collector is early-terminated).
   */
  @Override
  public void search(
      FlatVectorsScorer scorers, VectorSimilarityFunction similarity, FloatVectorValues vectors, float[] query,
      KnnCollector collector, AcceptDocs accept, long accepted) throws IOException {
    RandomVectorScorer scorer = scorers.getRandomVectorScorer(similarity, vectors.copy(), query);
    Bits acceptDocs = accept == null ? null : accept.bits();
    Bits acceptOrds = scorer.getAcceptOrds(acceptDocs);
    int effort = effort(collector.k(), accepted);
    if (effort == EXACT_EFFORT) {
      BeamSearch.exact(size, scorer, acceptOrds, collector);
    } else {
      new BeamSearch(this, entryLayer(scorers, similarity, vectors), scorer, acceptOrds, effort).run(collector);
    }
  }
}
