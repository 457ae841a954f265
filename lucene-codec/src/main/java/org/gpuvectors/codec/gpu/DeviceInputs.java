package org.gpuvectors.codec.gpu;

import java.io.IOException;
import org.gpuvectors.codec.ivf.IvfField;
import org.gpuvectors.codec.ivf.ProductQuantizer;
import org.gpuvectors.cuda.ivf.IvfLists;
import org.gpuvectors.cuda.ivf.PqCodebook;

/**
 * The codec's IVF structures as the GPU module takes them for an upload: here, at the device boundary, so that the
 * codec's CPU classes know nothing of the GPU module's types.
 */
public final class DeviceInputs {
  private DeviceInputs() {}

  /** The lists of an IVF field with every ordinal (read from the file). */
  public static IvfLists lists(IvfField field) throws IOException {
    return new IvfLists(field.nlist(), field.packedCentroids(), field.listOffsets(), field.ordinalsInListOrder());
  }

  /** The codebooks of a product quantizer (the same layout on both sides). */
  public static PqCodebook codebook(ProductQuantizer pq) {
    return new PqCodebook(pq.m(), pq.bits(), pq.subDims(), pq.codebooks());
  }
}
