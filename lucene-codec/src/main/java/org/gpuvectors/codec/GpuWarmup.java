package org.gpuvectors.codec;

import java.io.IOException;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReaderContext;
import org.gpuvectors.codec.gpu.GpuSearchService;

/**
 * Uploads an index's {@link GpuVectorsFormat} fields to the GPU before traffic, so that the first
 * queries do not pay the uploads. Segments already resident are left as they are. When the index's flat float
 * fields do not fit the free budget whole, they all go up as their compact copies (bfloat16, a third of the memory at
 * 768 dimensions, the host re-ranking their candidates): the whole index searched on the GPU, rather than the
 * segments that come first whole and the rest on the CPU.
 */
public final class GpuWarmup {

  /** What a warm-up did: segment fields resident afterwards, of how many, and how long it took. */
  public record Result(int resident, int fields, long nanos) {}

  private GpuWarmup() {}

  /** Makes every GPU-format vector field of every segment of {@code reader} resident on {@code service}. */
  public static Result warm(IndexReader reader, GpuSearchService service) throws IOException {
    long start = System.nanoTime();
    long wholeBytes = 0;
    for (LeafReaderContext leaf : reader.leaves()) {
      for (FieldInfo info : leaf.reader().getFieldInfos()) {
        GpuVectorsReader ours = ours(leaf, info);
        if (ours != null) {
          wholeBytes += ours.flatWholeBytes(info.name, service);
        }
      }
    }
    boolean compact = wholeBytes > 0 && service.fitsFree(wholeBytes) == false;
    int fields = 0;
    int resident = 0;
    for (LeafReaderContext leaf : reader.leaves()) {
      for (FieldInfo info : leaf.reader().getFieldInfos()) {
        GpuVectorsReader ours = ours(leaf, info);
        if (ours == null) {
          continue;
        }
        fields++;
        if (ours.warm(info.name, service, compact)) {
          resident++;
        }
      }
    }
    return new Result(resident, fields, System.nanoTime() - start);
  }

  /** The segment's reader of a GPU-format vector field, or null. */
  private static GpuVectorsReader ours(LeafReaderContext leaf, FieldInfo info) {
    if (info.getVectorDimension() == 0 || GpuVectorsFormat.isMarked(info) == false) {
      return null;
    }
    return KnnBatchSearcher.gpuVectorsReader(leaf.reader(), info.name);
  }
}
