package org.gpuvectors.codec;

import java.io.IOException;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReaderContext;
import org.gpuvectors.codec.gpu.GpuSearchService;

/**
 * Uploads an index's {@link GpuVectorsFormat} fields to the GPU before traffic, so that the first
 * queries do not pay the uploads. Segments already resident are left as they are.
 */
public final class GpuWarmup {

  /** What a warm-up did: segment fields resident afterwards, of how many, and how long it took. */
  public record Result(int resident, int fields, long nanos) {}

  private GpuWarmup() {}

  /** Makes every GPU-format vector field of every segment of {@code reader} resident on {@code service}. */
  public static Result warm(IndexReader reader, GpuSearchService service) throws IOException {
    long start = System.nanoTime();
    int fields = 0;
    int resident = 0;
    for (LeafReaderContext leaf : reader.leaves()) {
      for (FieldInfo info : leaf.reader().getFieldInfos()) {
        if (info.getVectorDimension() == 0 || GpuVectorsFormat.isMarked(info) == false) {
          continue;
        }
        GpuVectorsReader ours = KnnBatchSearcher.gpuVectorsReader(leaf.reader(), info.name);
        if (ours == null) {
          continue;
        }
        fields++;
        if (ours.warm(info.name, service)) {
          resident++;
        }
      }
    }
    return new Result(resident, fields, System.nanoTime() - start);
  }
}
