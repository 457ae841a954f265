package org.gpuvectors.codec.gpu;

import java.io.IOException;
import java.util.List;
import org.apache.lucene.index.ByteVectorValues;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.Metric;
import org.gpuvectors.codec.ivf.Assigner;
import org.gpuvectors.cuda.DeviceIndex;
import org.gpuvectors.cuda.SearchResult;
import org.gpuvectors.cuda.build.FarthestFirst;
import org.gpuvectors.cuda.build.GpuAssignment;
import org.gpuvectors.cuda.build.GraphPrune;
import org.gpuvectors.cuda.build.ReverseLinks;
import org.gpuvectors.cuda.device.GpuDevice;
import org.gpuvectors.cuda.flat.GpuElementFlatIndex;
import org.gpuvectors.cuda.flat.GpuFlatIndex;
import org.gpuvectors.cuda.graph.GpuGraphIndex;
import org.gpuvectors.cuda.ivf.GpuIvfFlatIndex;
import org.gpuvectors.cuda.ivf.GpuIvfPqIndex;
import org.gpuvectors.cuda.ivf.IvfLists;
import org.gpuvectors.cuda.pass.BatchSearch;
import org.gpuvectors.cuda.pass.PassCounters;
import org.gpuvectors.cuda.pass.PassGraphStats;
import org.gpuvectors.cuda.pass.PassGraphs;
import org.gpuvectors.cuda.pass.SearchGroup;
import org.gpuvectors.cuda.rerank.RerankStats;

/** The GPU as a {@link GpuBackend}: owns the {@link GpuDevice} it opens and closes it. */
final class CudaBackend implements GpuBackend {

  private final GpuDevice device;

  CudaBackend(GpuDevice device) {
    this.device = device;
  }

  @Override
  public String deviceName() {
    return device.name();
  }

  @Override
  public long totalMemoryBytes() {
    return device.totalMemoryBytes();
  }

  @Override
  public long estimateBytes(int size, int dims, Metric metric, GpuStructure structure) {
    long n = Math.max(1, size);
    long vectors = 4L * n * dims;
    return switch (structure) {
      // the vectors, their norms (L2) and their FP16 copy for small batches (GpuFlatIndex.addHalfCopy)
      case null -> vectors + (metric == Metric.L2 ? 4L * n : 0) + GpuFlatIndex.halfCopyBytes(device, n, dims);
      // the vectors as a flat index (+ norms: the exact search of selective filters), the adjacency, the entry points
      case GpuGraph graph -> vectors + (metric == Metric.L2 ? 4L * n : 0) + 4L * n * graph.degree()
          + 4L * graph.seeds().length;
      // the centroids as a flat index (+ norms for L2), list offsets, the ordinals, then the vectors in list order
      // (ivf_flat) or the codes (interleaved, whole 16-byte chunks), the codebooks (ivf_pq: at most 256 codewords
      // per sub-quantizer), the code terms (L2) and, for the device re-rank, the raw vectors by ordinal
      case GpuIvf ivf -> {
        long lists = 4L * ivf.nlist() * dims + (metric == Metric.L2 ? 4L * ivf.nlist() : 0)
            + 4L * (ivf.nlist() + 1) + 4L * n;
        long codes = ivf.pq() == null ? 0 : GpuIvfPqIndex.deviceCodeBytes((int) n, ivf.pq().m());
        yield lists + (ivf.pq() == null ? vectors : codes + 4L * 256 * dims
            + (metric == Metric.L2 ? 4L * n : 0) + (ivf.pq().reranksOnDevice() ? vectors : 0));
      }
    };
  }

  @Override
  public Assigner.Held hold(float[][] points, int count, int groups, Metric metric) {
    GpuAssignment held = GpuAssignment.hold(device, points, count, points[0].length, groups, DeviceMetric.of(metric));
    return new Assigner.Held() {
      @Override
      public int[] nearest(float[] centroids, int k) {
        return held.nearest(centroids, k);
      }

      @Override
      public int[] update(float[] centroids, int k) {
        GpuAssignment.Means means = held.step(centroids, k);
        int[] counts = means.counts();
        if (means.means().length != centroids.length) {
          throw new IllegalStateException(means.means().length + " floats of means for " + centroids.length);
        }
        int subDims = centroids.length / counts.length;
        for (int gc = 0; gc < counts.length; gc++) {
          if (counts[gc] > 0) {
            System.arraycopy(means.means(), gc * subDims, centroids, gc * subDims, subDims);
          }
        }
        return counts;
      }

      @Override
      public void close() {
        held.close();
      }
    };
  }

  /** Queries per brute-force pass of {@link #nearestK} (bounds the results held on the device at once). */
  private static final int NEAREST_K_BLOCK = 8192;

  @Override
  public SearchResult nearestK(float[] base, int numBase, float[] points, int count, int dims, Metric metric, int k) {
    int[] ids = new int[count * k];
    float[] distances = new float[count * k];
    // the base is uploaded once, the points go in blocks; the flat index tiles the distance matrix itself
    try (GpuFlatIndex index = GpuFlatIndex.upload(device, base, numBase, dims, DeviceMetric.of(metric))) {
      for (int first = 0; first < count; first += NEAREST_K_BLOCK) {
        int n = Math.min(NEAREST_K_BLOCK, count - first);
        float[] block = java.util.Arrays.copyOfRange(points, first * dims, (first + n) * dims);
        SearchResult result = BatchSearch.run(device, List.of(new SearchGroup(index, block, n, k, null, null)))[0];
        for (int q = 0; q < n; q++) {
          for (int i = 0; i < k; i++) {
            boolean present = i < result.count(q);
            ids[(first + q) * k + i] = present ? result.id(q, i) : -1;
            distances[(first + q) * k + i] = present ? result.distance(q, i) : Float.NaN;
          }
        }
      }
    }
    return new SearchResult(count, k, ids, distances);
  }

  @Override
  public HeldVectors holdVectors(float[][] rows, int n, int dims, Metric metric) {
    GpuFlatIndex index = GpuFlatIndex.upload(device, rows, n, dims, DeviceMetric.of(metric));
    return new HeldVectors() {
      @Override
      public int[] nearestKOwn(int k) {
        // TF32 candidates with the exact re-rank for large batches (the same ids as FP32): a k-NN graph's n queries
        // are the largest batch there is
        index.setPrecision(GpuFlatIndex.Precision.AUTO);
        return index.searchOwnVectors(0, n, k);
      }

      @Override
      public float[] neighbourGaps(int[] sample, int[] adjacency, int degree, boolean cosine) {
        return dims > FarthestFirst.MAX_DIMS ? null
            : FarthestFirst.neighbourGaps(device, index, sample, adjacency, degree, cosine);
      }

      @Override
      public int[] farthestFirst(int[] sample, boolean cosine, float[] scale, int seedCount, int limit,
                                 float uncovered) {
        return dims > FarthestFirst.MAX_DIMS ? null
            : FarthestFirst.traverse(device, index, sample, cosine, scale, seedCount, limit, uncovered);
      }

      @Override
      public void close() {
        index.close();
      }
    };
  }

  @Override
  public int[] reverseLinks(int[] pruned, int n, int degree) {
    return ReverseLinks.add(device, pruned, n, degree);
  }

  @Override
  public int[] prune(int[] knn, int n, int k, int degree) {
    return GraphPrune.prune(device, knn, n, k, degree);
  }

  @Override
  public DeviceIndex upload(FloatVectorValues vectors, Metric metric, GpuStructure structure) throws IOException {
    int dims = vectors.dimension();
    if (structure instanceof GpuGraph graph) {
      return GpuGraphIndex.upload(
          device, vectors.size(), dims, DeviceMetric.of(metric), rowsInOrder(vectors), graph.adjacency().get(), graph.degree(),
          graph.seeds());
    }
    if (structure instanceof GpuIvf ivf && ivf.pq() != null) {
      GpuIvf.Pq pq = ivf.pq();
      // with the raw vectors (by ordinal) the device re-ranks its candidates: the searcher asked for k exact results
      return GpuIvfPqIndex.upload(
          device, ivf.lists().get(), pq.codebook().get(), pq.codesInListOrder().get(), dims, DeviceMetric.of(metric),
          pq.reranksOnDevice() ? rowsInOrder(vectors) : null, pq.rerankFactor());
    }
    if (structure instanceof GpuIvf ivf) {
      IvfLists lists = ivf.lists().get();
      int[] ords = lists.ords();
      // the vectors go in list order: row p of the device index is the vector of ordinal ords[p]
      return GpuIvfFlatIndex.upload(
          device,
          lists,
          dims,
          DeviceMetric.of(metric),
          (first, count, dst) -> {
            for (int i = 0; i < count; i++) {
              System.arraycopy(vectors.vectorValue(ords[first + i]), 0, dst, i * dims, dims);
            }
          });
    }
    // streamed a slab at a time: the segment's vectors never sit whole on the Java heap
    GpuFlatIndex flat = GpuFlatIndex.upload(device, vectors.size(), dims, DeviceMetric.of(metric), rowsInOrder(vectors));
    boolean ok = false;
    try {
      // large batches: TF32 candidates and an exact FP32 re-rank, the same results as FP32
      flat.setPrecision(GpuFlatIndex.Precision.AUTO);
      flat.addHalfCopy();
      ok = true;
      return flat;
    } finally {
      if (!ok) {
        flat.close();
      }
    }
  }

  @Override
  public DeviceIndex upload(ElementVectors vectors, Metric metric) throws IOException {
    int n = vectors.size();
    int dims = vectors.dims();
    org.gpuvectors.cuda.Metric deviceMetric = DeviceMetric.of(metric);
    if (vectors.values() instanceof FloatVectorValues floats) { // bfloat16: the values read back, as floats
      return GpuElementFlatIndex.uploadBf16(device, n, dims, deviceMetric, rowsInOrder(floats));
    }
    ByteVectorValues bytes = (ByteVectorValues) vectors.values();
    // streamed a slab at a time, like the float rows: the segment's vectors never sit whole on the Java heap
    return GpuElementFlatIndex.upload(device, vectors.element(), n, dims, deviceMetric, (first, count, dst) -> {
      for (int i = 0; i < count; i++) {
        System.arraycopy(bytes.vectorValue(first + i), 0, dst, i * dims, dims);
      }
    });
  }

  /** The vectors by ordinal, a slab at a time (they never sit whole on the Java heap). */
  private static GpuFlatIndex.RowSource rowsInOrder(FloatVectorValues vectors) {
    int dims = vectors.dimension();
    return (first, count, dst) -> {
      for (int i = 0; i < count; i++) {
        System.arraycopy(vectors.vectorValue(first + i), 0, dst, i * dims, dims);
      }
    };
  }

  @Override
  public void profilerRange(boolean on) {
    device.profilerRange(on);
  }

  @Override
  public PassGraphStats passGraphs() {
    return PassGraphs.stats(device);
  }

  @Override
  public RerankStats halfScans() {
    return PassCounters.of(device).halfScanStats();
  }

  @Override
  public int concurrentPasses() {
    return device.concurrentPasses();
  }

  @Override
  public SearchResult[] search(List<SearchGroup> groups, long[] timing) {
    return BatchSearch.run(device, groups, timing);
  }

  @Override
  public void close() {
    device.close();
  }

  @Override
  public String toString() {
    return "CudaBackend[" + device + "]";
  }
}
