package org.gpuvectors.codec.ivf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.lucene.store.IndexInput;
import org.apache.lucene.store.IndexOutput;

/**
 * A segment field's inverted lists as built: the coarse centroids, and the vector ordinals grouped
 * by list (list {@code l} holds {@code ords[offsets[l] .. offsets[l + 1])}, ascending within a list).
 * Also its encoding in the {@code .gvd} file (see {@code GpuVectorsFormat} for the layout): all of an
 * {@code ivf_flat} field's data, and the start of an {@code ivf_pq} field's ({@link IvfPqLayout}). Its
 * reader is {@link IvfField}: the same lists as read from the file.
 */
public record IvfLayout(float[][] centroids, int[] offsets, int[] ords, IvfBuilder.Training training)
    implements BuiltIvf {

  /** Groups ordinals {@code 0 .. list.length - 1} by their list (a counting sort: stable, so ascending). */
  static IvfLayout fromAssignment(float[][] centroids, int[] list, IvfBuilder.Training training) {
    int nlist = centroids.length;
    int[] offsets = new int[nlist + 1];
    for (int l : list) {
      offsets[l + 1]++;
    }
    for (int l = 0; l < nlist; l++) {
      offsets[l + 1] += offsets[l];
    }
    int[] next = offsets.clone();
    int[] ords = new int[list.length];
    for (int ord = 0; ord < list.length; ord++) {
      ords[next[list[ord]]++] = ord;
    }
    return new IvfLayout(centroids, offsets, ords, training);
  }

  @Override
  public int nlist() {
    return centroids.length;
  }

  /** The list of every ordinal ({@code list[ord]}), the inverse of the grouping. */
  int[] listOfOrdinals() {
    int[] list = new int[ords.length];
    for (int l = 0; l < nlist(); l++) {
      for (int p = offsets[l]; p < offsets[l + 1]; p++) {
        list[ords[p]] = l;
      }
    }
    return list;
  }

  /** The same lists with every ordinal renamed {@code oldToNew[ord]} (index sorting), ascending again. */
  @Override
  public IvfLayout remap(int[] oldToNew) {
    int[] ords = new int[this.ords.length];
    for (int p = 0; p < ords.length; p++) {
      ords[p] = oldToNew[this.ords[p]];
    }
    for (int l = 0; l < nlist(); l++) {
      java.util.Arrays.sort(ords, offsets[l], offsets[l + 1]);
    }
    return new IvfLayout(centroids, offsets, ords, training);
  }

  /**
   * Writes the lists: nlist, the training record, centroids (float32), offsets and ordinals (int32),
   * all little-endian. Read back by {@link IvfField#readLists}.
   */
  @Override
  public void writeTo(IndexOutput out, int probes) throws IOException {
    out.writeVInt(nlist());
    out.writeVInt(probes);
    out.writeVInt(training.samples());
    out.writeVInt(training.iterations());
    out.writeLong(training.seed());
    for (float[] c : centroids) {
      writeFloats(out, c);
    }
    for (int o : offsets) {
      out.writeInt(o);
    }
    for (int ord : ords) {
      out.writeInt(ord);
    }
  }

  /** Writes floats little-endian, as {@link org.apache.lucene.store.DataInput#readFloats} reads them. */
  static void writeFloats(IndexOutput out, float[] values) throws IOException {
    ByteBuffer bytes = ByteBuffer.allocate(4 * values.length).order(ByteOrder.LITTLE_ENDIAN);
    bytes.asFloatBuffer().put(values);
    out.writeBytes(bytes.array(), bytes.capacity());
  }
}
