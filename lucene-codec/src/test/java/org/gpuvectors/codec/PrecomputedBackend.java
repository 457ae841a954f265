package org.gpuvectors.codec;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.util.VectorUtil;
import org.gpuvectors.codec.gpu.GpuBackend;
import org.gpuvectors.codec.gpu.GpuIvf;
import org.gpuvectors.codec.gpu.GpuStructure;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.ivf.Assigner;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.SearchParams;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.ivf.IvfLists;
import org.gpuvectors.cuda.pass.SearchGroup;

/**
 * A {@link GpuBackend} for timing the host side of a batch search without a GPU ({@link
 * HostPathBenchmark}): the first pass over a group computes its results on the CPU (all cores:
 * exact over all vectors for flat indexes, over the {@code nprobe} nearest lists for IVF ones, with
 * the kernels' conventions), and every later pass with the same index, queries, k, nprobe and masks
 * returns them at once, so the host work around a pass is what a run measures.
 */
final class PrecomputedBackend implements GpuBackend {

  private record Key(DeviceIndex index, int numQueries, int k, SearchParams params, int queriesHash, Object mask) {}

  private final Map<Key, SearchResult> answers = new ConcurrentHashMap<>();

  @Override
  public String deviceName() {
    return "precomputed";
  }

  @Override
  public long totalMemoryBytes() {
    return 1L << 40;
  }

  @Override
  public long estimateBytes(int size, int dims, Metric metric, GpuStructure structure) {
    return 4L * Math.max(1, size) * dims;
  }

  @Override
  public DeviceIndex upload(FloatVectorValues vectors, Metric metric, GpuStructure structure) throws IOException {
    int n = vectors.size();
    float[][] data = new float[n][];
    for (int i = 0; i < n; i++) {
      data[i] = vectors.vectorValue(i).clone();
      if (metric == Metric.COSINE) {
        VectorUtil.l2normalize(data[i]);
      }
    }
    return new Index(data, vectors.dimension(), metric, structure instanceof GpuIvf ivf ? ivf.lists().get() : null);
  }

  @Override
  public Assigner.Held hold(float[][] points, int count, int groups, Metric metric) {
    throw new UnsupportedOperationException("indexes are built on the CPU for this backend");
  }

  @Override
  public SearchResult nearestK(float[] base, int numBase, float[] points, int count, int dims, Metric metric, int k) {
    throw new UnsupportedOperationException("indexes are built on the CPU for this backend");
  }

  @Override
  public int[] prune(int[] knn, int n, int k, int degree) {
    throw new UnsupportedOperationException("indexes are built on the CPU for this backend");
  }

  @Override
  public int[] reverseLinks(int[] pruned, int n, int degree) {
    throw new UnsupportedOperationException("indexes are built on the CPU for this backend");
  }

  @Override
  public SearchResult[] search(List<SearchGroup> groups, long[] timing) {
    SearchResult[] out = new SearchResult[groups.size()];
    for (int g = 0; g < out.length; g++) {
      SearchGroup group = groups.get(g);
      Object mask = group.queryMasks() != null ? Arrays.asList(group.queryMasks()) : group.sharedMask();
      Key key = new Key(group.index(), group.numQueries(), group.k(), group.params(), sampleHash(group), mask);
      out[g] = answers.computeIfAbsent(key, unused -> compute(group));
    }
    return out;
  }

  /** A hash of a few floats of every 7th query: cheap, and distinct for the benchmark's batches. */
  private static int sampleHash(SearchGroup group) {
    int hash = 1;
    int dims = group.index().dims();
    for (int q = 0; q < group.numQueries(); q += 7) {
      for (int d = q % 61; d < dims; d += 61) {
        float x = group.queryRows() != null ? group.queryRows()[q][d] : group.queries()[q * dims + d];
        hash = 31 * hash + Float.floatToIntBits(x);
      }
    }
    return hash;
  }

  private static SearchResult compute(SearchGroup group) {
    Index index = (Index) group.index();
    int k = group.k();
    int[] ids = new int[group.numQueries() * k];
    float[] distances = new float[group.numQueries() * k];
    Arrays.fill(ids, -1);
    IntStream.range(0, group.numQueries()).parallel().forEach(q -> {
      float[] query = group.query(q);
      if (index.metric == Metric.COSINE) {
        VectorUtil.l2normalize(query);
      }
      long[] mask = group.queryMasks() != null ? group.queryMasks()[q] : group.sharedMask();
      boolean largest = index.metric != Metric.L2;
      // insertion into a sorted array of k (distance, id), best first; ties: lower id first
      float[] best = new float[k];
      int[] bestIds = new int[k];
      int filled = 0;
      for (int id : index.candidates(query, org.gpuvectors.codec.gpu.FakeBackend.nprobe(group))) {
        if (mask != null && ((mask[id >>> 6] >>> id) & 1) == 0) {
          continue;
        }
        float[] v = index.data[id];
        float d = largest ? VectorUtil.dotProduct(v, query) : VectorUtil.squareDistance(v, query);
        int at = filled;
        while (at > 0 && better(d, id, best[at - 1], bestIds[at - 1], largest)) {
          at--;
        }
        if (at >= k) {
          continue;
        }
        int move = Math.min(filled, k - 1) - at;
        System.arraycopy(best, at, best, at + 1, move);
        System.arraycopy(bestIds, at, bestIds, at + 1, move);
        best[at] = d;
        bestIds[at] = id;
        filled = Math.min(k, filled + 1);
      }
      System.arraycopy(best, 0, distances, q * k, filled);
      System.arraycopy(bestIds, 0, ids, q * k, filled);
    });
    return new SearchResult(group.numQueries(), k, ids, distances);
  }

  private static boolean better(float d, int id, float other, int otherId, boolean largest) {
    if (d != other) {
      return largest ? d > other : d < other;
    }
    return id < otherId;
  }

  @Override
  public void close() {
    answers.clear();
  }

  /** Vectors on the heap (by ordinal), and an IVF index's lists. */
  private static final class Index implements DeviceIndex {
    final float[][] data;
    final int dims;
    final Metric metric;
    final IvfLists lists;

    Index(float[][] data, int dims, Metric metric, IvfLists lists) {
      this.data = data;
      this.dims = dims;
      this.metric = metric;
      this.lists = lists;
    }

    /** An IVF index takes the lists to probe, the others (flat, and graph fields held as flat) anything else. */
    @Override
    public void checkSearch(SearchParams params, int k) {
      if ((lists != null) != (params instanceof SearchParams.Ivf)) {
        throw new IllegalArgumentException((lists != null ? "an IVF index" : "no IVF index") + " searched with " + params);
      }
    }

    /** All ordinals of a flat index; of an IVF index, those in the nprobe lists nearest to the query. */
    int[] candidates(float[] query, int nprobe) {
      if (lists == null) {
        return IntStream.range(0, data.length).toArray();
      }
      int nlist = lists.nlist();
      float[] centroids = lists.centroids();
      Integer[] order = new Integer[nlist];
      float[] rank = new float[nlist];
      for (int l = 0; l < nlist; l++) {
        order[l] = l;
        float[] centroid = Arrays.copyOfRange(centroids, l * dims, (l + 1) * dims);
        if (metric == Metric.COSINE) {
          VectorUtil.l2normalize(centroid);
        }
        rank[l] = metric == Metric.L2 ? VectorUtil.squareDistance(centroid, query) : -VectorUtil.dotProduct(centroid, query);
      }
      Arrays.sort(order, (a, b) -> rank[a] != rank[b] ? Float.compare(rank[a], rank[b]) : Integer.compare(a, b));
      int[] offsets = lists.offsets();
      IntStream probed = IntStream.empty();
      for (int i = 0; i < Math.min(nprobe, nlist); i++) {
        int l = order[i];
        probed = IntStream.concat(probed, Arrays.stream(lists.ords(), offsets[l], offsets[l + 1]));
      }
      return probed.toArray();
    }

    @Override
    public int size() {
      return data.length;
    }

    @Override
    public int dims() {
      return dims;
    }

    @Override
    public org.gpuvectors.cuda.Metric metric() {
      return org.gpuvectors.codec.gpu.DeviceMetric.of(metric);
    }

    @Override
    public org.gpuvectors.cuda.DeviceBytes deviceBytesByPart() {
      return org.gpuvectors.cuda.DeviceBytes.builder()
          .add(org.gpuvectors.cuda.MemoryPart.VECTORS, 4L * data.length * dims)
          .build();
    }

    @Override
    public void close() {}
  }
}
