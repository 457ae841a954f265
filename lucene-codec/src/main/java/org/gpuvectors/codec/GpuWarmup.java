package org.gpuvectors.codec;

import java.io.IOException;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReaderContext;
import org.gpuvectors.codec.gpu.GpuSearchService;

/**
 * Uploads an index's {@link GpuVectorsFormat} fields to the GPU before traffic, so that the first
 * queries do not pay the uploads. Segments already resident are left as they are. The forms are planned for the
 * whole index, so that it is searched on the GPU whole rather than its first segments in their larger forms and the
 * rest on the CPU: when the index does not fit the free budget in its larger forms, its ivf_pq fields go up as their
 * codes alone (the host re-ranking their candidates); when it does not fit even so, its flat float fields go up as
 * their compact copies too (bfloat16, a third of the memory at 768 dimensions, the host re-ranking and proving their
 * candidates).
 */
public final class GpuWarmup {

  /** What a warm-up did: segment fields resident afterwards, of how many, and how long it took. */
  public record Result(int resident, int fields, long nanos) {}

  private GpuWarmup() {}

  /** Makes every GPU-format vector field of every segment of {@code reader} resident on {@code service}. */
  public static Result warm(IndexReader reader, GpuSearchService service) throws IOException {
    long start = System.nanoTime();
    long flatWhole = 0;
    long ivfPqWithRaw = 0;
    long ivfPqCodes = 0;
    for (LeafReaderContext leaf : reader.leaves()) {
      for (FieldInfo info : leaf.reader().getFieldInfos()) {
        GpuVectorsReader ours = ours(leaf, info);
        if (ours != null) {
          flatWhole += ours.flatWholeBytes(info.name, service);
          ivfPqWithRaw += ours.ivfPqBytes(info.name, service, true);
          ivfPqCodes += ours.ivfPqBytes(info.name, service, false);
        }
      }
    }
    // the larger forms go in order of value per byte: ivf_pq raw vectors first (the host re-ranks from the index's
    // files), flat fields whole next (a whole field is searched with its peers in one pass; a copy on its own)
    boolean codes = ivfPqWithRaw > ivfPqCodes && service.fitsFree(flatWhole + ivfPqWithRaw) == false;
    boolean compact = flatWhole > 0 && service.fitsFree(flatWhole + (codes ? ivfPqCodes : ivfPqWithRaw)) == false;
    int fields = 0;
    int resident = 0;
    for (LeafReaderContext leaf : reader.leaves()) {
      for (FieldInfo info : leaf.reader().getFieldInfos()) {
        GpuVectorsReader ours = ours(leaf, info);
        if (ours == null) {
          continue;
        }
        fields++;
        if (ours.warm(info.name, service, compact, codes)) {
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
