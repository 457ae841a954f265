package org.gpuvectors.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/**
 * The parameter encodings are byte for byte those of the hand-written {@code encode()} methods that the declared
 * layouts replaced (kept here, frozen, as the reference): every field set to a distinct value. The kernels read the
 * same bytes as before.
 */
class ParamEncodingRegressionTest {

  private static ByteBuffer le(int bytes) {
    return ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
  }

  @Test
  void selectParams() {
    SelectParams p = DistinctFields.fill(new SelectParams());
    ByteBuffer b = le(128);
    b.putLong(p.in).putLong(p.inIdx).putLong(p.colNorms).putLong(p.rowNorms).putLong(p.acceptBits).putLong(p.outK)
        .putLong(p.outIdx).putLong(p.rowLens);
    b.putLong(p.inRowStride).putLong(p.idxOffset).putLong(p.outRowStride).putLong(p.acceptRowWords);
    b.putInt(p.rows).putInt(p.len).putInt(p.k).putInt(p.chunksPerRow).putInt(p.chunkLen);
    b.putFloat(p.inScale).putFloat(p.outScale).putInt(p.clampZero ? 1 : 0);
    assertArrayEquals(b.array(), p.encode());
  }

  @Test
  void ivfScanParams() {
    IvfScanParams p = DistinctFields.fill(new IvfScanParams());
    ByteBuffer b = le(96);
    b.putLong(p.vectors).putLong(p.ords).putLong(p.listOffsets).putLong(p.queries).putLong(p.probes)
        .putLong(p.acceptBits).putLong(p.outK).putLong(p.outIdx).putLong(p.acceptRowWords).putLong(p.outRowStride);
    b.putInt(p.dims).putInt(p.k).putInt(p.nprobe).putInt(p.metric);
    assertArrayEquals(b.array(), p.encode());
  }

  @Test
  void ivfGroupParams() {
    IvfGroupParams p = DistinctFields.fill(new IvfGroupParams());
    ByteBuffer b = le(48);
    b.putLong(p.counts).putLong(p.ranks).putLong(p.pairs).putLong(p.pairOffsets).putLong(p.tileOffsets);
    b.putInt(p.numQueries).putInt(p.nlist);
    assertArrayEquals(b.array(), p.encode());
  }

  @Test
  void ivfPqScanParams() {
    IvfPqScanParams p = DistinctFields.fill(new IvfPqScanParams());
    ByteBuffer b = le(152);
    b.putLong(p.codes).putLong(p.ords).putLong(p.listOffsets).putLong(p.queries).putLong(p.centroids)
        .putLong(p.codebooks).putLong(p.probes).putLong(p.acceptBits).putLong(p.tables).putLong(p.codeTerms)
        .putLong(p.outK).putLong(p.outIdx).putLong(p.acceptRowWords).putLong(p.outRowStride).putLong(p.rowLengths);
    b.putInt(p.dims).putInt(p.k).putInt(p.nprobe).putInt(p.metric).putInt(p.m).putInt(p.bits)
        .putInt(p.probesPerBlock).putInt(p.numQueries);
    assertArrayEquals(b.array(), p.encode());
  }

  @Test
  void rerankParams() {
    RerankParams p = DistinctFields.fill(new RerankParams());
    ByteBuffer b = le(120);
    b.putLong(p.vectors).putLong(p.queries).putLong(p.candIdx).putLong(p.candKeys).putLong(p.exactKeys)
        .putLong(p.stats).putLong(p.outK).putLong(p.outIdx).putLong(p.rowsDone).putLong(p.chunkKeys)
        .putLong(p.chunkRowStride);
    b.putInt(p.dims).putInt(p.numQueries).putInt(p.candidates).putInt(p.k).putInt(p.metric).putFloat(p.outScale)
        .putInt(p.chunkK).putInt(p.chunks);
    assertArrayEquals(b.array(), p.encode());
  }

  @Test
  void flatScanParams() {
    FlatScanParams p = DistinctFields.fill(new FlatScanParams());
    ByteBuffer b = le(96);
    b.putLong(p.vectors).putLong(p.norms).putLong(p.queries).putLong(p.acceptBits).putLong(p.outK).putLong(p.outIdx);
    b.putLong(p.n).putLong(p.acceptRowWords).putLong(p.outRowStride);
    b.putInt(p.dims).putInt(p.numQueries).putInt(p.k).putInt(p.chunks).putInt(p.chunkLen).putInt(p.metric);
    assertArrayEquals(b.array(), p.encode());
  }

  @Test
  void halfScanParams() {
    HalfScanParams p = DistinctFields.fill(new HalfScanParams());
    ByteBuffer b = le(104);
    b.putLong(p.vectors).putLong(p.norms).putLong(p.queries).putLong(p.acceptBits).putLong(p.outK).putLong(p.outIdx);
    b.putLong(p.n).putLong(p.acceptRowWords).putLong(p.outRowStride);
    b.putInt(p.dims).putInt(p.dimsPad).putInt(p.numQueries).putInt(p.k).putInt(p.chunks).putInt(p.chunkLen)
        .putInt(p.metric).putFloat(p.vectorUnscale);
    assertArrayEquals(b.array(), p.encode());
  }

  @Test
  void graphSearchParams() {
    GraphSearchParams p = DistinctFields.fill(new GraphSearchParams());
    ByteBuffer b = le(120);
    b.putLong(p.vectors).putLong(p.graph).putLong(p.seeds).putLong(p.queries).putLong(p.acceptBits).putLong(p.outK)
        .putLong(p.outIdx).putLong(p.acceptRowWords);
    b.putInt(p.numQueries).putInt(p.n).putInt(p.dims).putInt(p.degree).putInt(p.numSeeds).putInt(p.k)
        .putInt(p.width).putInt(p.batch).putInt(p.parents).putInt(p.teamSize).putInt(p.hashWords).putInt(p.metric)
        .putInt(p.maxIterations).putInt(0); // the pad
    assertArrayEquals(b.array(), p.encode());
  }
}
