package org.gpuvectors.codec.graph;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.apache.lucene.store.IndexOutput;

/**
 * A segment field's graph as built, and its encoding in the {@code .gvd} file (see {@code
 * GpuVectorsFormat} for the layout): the fixed-degree adjacency ({@code n * degree} ordinals, row i
 * the out-neighbours of vector i, -1 padding only in segments of at most {@code degree} vectors), the
 * entry points, and the parameters the build used. Its reader is {@link GraphField}: the same graph as
 * read from the file.
 */
public record GraphLayout(
    int degree, int buildDegree, int searchWidth, long seed, int[] adjacency, int[] seeds) {

  /** Version of the graph data's encoding, written first. */
  static final int VERSION = 0;
  /** Adjacency ints per write (64 kB). */
  private static final int WRITE_CHUNK_INTS = 16 * 1024;

  /** Vectors in the graph. */
  public int size() {
    return adjacency.length / degree;
  }

  /**
   * The same graph with every ordinal renamed {@code oldToNew[ord]} (a flush under index sorting builds
   * on the buffered order; the segment numbers vectors in the sorted order): row {@code oldToNew[i]}
   * is old row {@code i} renamed, seeds renamed and sorted again.
   */
  public GraphLayout remap(int[] oldToNew) {
    int n = size();
    int[] mapped = new int[adjacency.length];
    for (int i = 0; i < n; i++) {
      int to = oldToNew[i] * degree;
      for (int p = 0; p < degree; p++) {
        int j = adjacency[i * degree + p];
        mapped[to + p] = j < 0 ? -1 : oldToNew[j];
      }
    }
    int[] mappedSeeds = new int[seeds.length];
    for (int s = 0; s < seeds.length; s++) {
      mappedSeeds[s] = oldToNew[seeds[s]];
    }
    Arrays.sort(mappedSeeds);
    return new GraphLayout(degree, buildDegree, searchWidth, seed, mapped, mappedSeeds);
  }

  /** Writes the graph: version, parameters, seeds, adjacency (int32 little-endian). Read back by {@link GraphField#read}. */
  public void writeTo(IndexOutput out) throws IOException {
    out.writeVInt(VERSION);
    out.writeVInt(degree);
    out.writeVInt(buildDegree);
    out.writeVInt(searchWidth);
    out.writeLong(seed);
    out.writeVInt(seeds.length);
    for (int s : seeds) {
      out.writeInt(s);
    }
    // in chunks of bytes: a call per int took about 0.5 s for a million vectors of degree 32
    ByteBuffer chunk = ByteBuffer.allocate(WRITE_CHUNK_INTS * Integer.BYTES).order(ByteOrder.LITTLE_ENDIAN);
    for (int from = 0; from < adjacency.length; from += WRITE_CHUNK_INTS) {
      int count = Math.min(WRITE_CHUNK_INTS, adjacency.length - from);
      chunk.clear();
      chunk.asIntBuffer().put(adjacency, from, count);
      out.writeBytes(chunk.array(), count * Integer.BYTES);
    }
  }
}
