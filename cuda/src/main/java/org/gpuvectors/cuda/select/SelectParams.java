package org.gpuvectors.cuda.select;

import org.gpuvectors.cuda.runtime.DeviceBuffer;
import org.gpuvectors.cuda.runtime.StructLayout;

/**
 * Parameters of one k-selection launch over the rows of a row-major float matrix in device memory
 * (mirrors {@code gv::SelectParams} in common.cuh, 128 bytes). Defaults: smallest k, ids = column,
 * one chunk per row, no filter. Each (row, chunk) writes k (value, id) pairs best first at
 * {@code out + row * outRowStride + chunk * k}; empty slots have id -1.
 *
 * <p>Value selected for column c of row r: {@code inScale * in[r][c] + colNorms[id] + rowNorms[r]}
 * (norms optional), clamped at 0 when {@code clampZero}; NaN, +inf (after the scale) and ids whose
 * accept bit is 0 are never selected. "Largest" uses inScale = outScale = -1.
 *
 * <p>Not thread-safe (a plain value object).
 */
public final class SelectParams {
  /** The layout of {@code gv::SelectParams} (common.cuh): its members in its order, read from these fields. */
  public static final StructLayout<SelectParams> LAYOUT =
      StructLayout.<SelectParams>struct("SelectParams")
          .i64("in", p -> p.in)
          .i64("inIdx", p -> p.inIdx)
          .i64("colNorms", p -> p.colNorms)
          .i64("rowNorms", p -> p.rowNorms)
          .i64("acceptBits", p -> p.acceptBits)
          .i64("outK", p -> p.outK)
          .i64("outIdx", p -> p.outIdx)
          .i64("rowLens", p -> p.rowLens)
          .i64("inRowStride", p -> p.inRowStride)
          .i64("idxOffset", p -> p.idxOffset)
          .i64("outRowStride", p -> p.outRowStride)
          .i64("acceptRowWords", p -> p.acceptRowWords)
          .i32("rows", p -> p.rows)
          .i32("len", p -> p.len)
          .i32("k", p -> p.k)
          .i32("chunksPerRow", p -> p.chunksPerRow)
          .i32("chunkLen", p -> p.chunkLen)
          .f32("inScale", p -> p.inScale)
          .f32("outScale", p -> p.outScale)
          .i32("clampZero", p -> p.clampZero ? 1 : 0)
          .build();
  public static final int BYTES = LAYOUT.bytes();

  long in;
  public long inIdx;
  long colNorms;
  long rowNorms;
  long acceptBits;
  long outK;
  long outIdx;
  /** {@link KSelect#radixSelect} only: device address of each row's column count (at most len), or 0: len. */
  long rowLens;
  long inRowStride;
  long idxOffset;
  long outRowStride;
  long acceptRowWords;
  int rows;
  int len;
  int k;
  int chunksPerRow = 1;
  int chunkLen;
  float inScale = 1f;
  float outScale = 1f;
  boolean clampZero;
  /**
   * Host only, not encoded: the length most rows have when {@link #rowLens} leaves them shorter than {@link #len}
   * (the capacity, the longest a row may be), or 0: len. {@link KSelect#radixSelect} picks its path by it.
   */
  int typicalLen;

  public SelectParams() {}

  /** Input matrix: {@code rows} x {@code len} values, row stride {@code rowStride} elements. */
  public SelectParams input(DeviceBuffer values, int rows, int len, long rowStride) {
    this.in = values.address();
    this.rows = rows;
    this.len = len;
    this.inRowStride = rowStride;
    return this;
  }

  /** Ids of the input values (same layout as the values); default: id = idOffset + column. */
  public SelectParams inputIds(DeviceBuffer ids) {
    this.inIdx = ids == null ? 0 : ids.address();
    return this;
  }

  /** Columns of each row (one int per row, at most len; {@link KSelect#radixSelect} only); null: len. */
  public SelectParams rowLengths(DeviceBuffer lengths) {
    this.rowLens = lengths == null ? 0 : lengths.address();
    return this;
  }

  /** The length most rows have, below {@link #len} (see {@link #typicalLen}; {@link KSelect#radixSelect} only). */
  public SelectParams typicalRowLength(long length) {
    this.typicalLen = (int) Math.min(Integer.MAX_VALUE, Math.max(0, length));
    return this;
  }

  public SelectParams idOffset(long offset) {
    this.idxOffset = offset;
    return this;
  }

  public SelectParams output(DeviceBuffer values, DeviceBuffer ids, long rowStride) {
    this.outK = values.address();
    this.outIdx = ids.address();
    this.outRowStride = rowStride;
    return this;
  }

  /** Output at a byte offset into the buffers (a tile's slot in a candidate matrix). */
  public SelectParams output(DeviceBuffer values, DeviceBuffer ids, long rowStride, long elementOffset) {
    this.outK = values.address() + 4 * elementOffset;
    this.outIdx = ids.address() + 4 * elementOffset;
    this.outRowStride = rowStride;
    return this;
  }

  public SelectParams k(int k) {
    this.k = k;
    return this;
  }

  /** Select the largest values instead of the smallest. */
  public SelectParams largest(boolean largest) {
    this.inScale = largest ? -1f : 1f;
    this.outScale = largest ? -1f : 1f;
    return this;
  }

  public SelectParams scales(float inScale, float outScale) {
    this.inScale = inScale;
    this.outScale = outScale;
    return this;
  }

  public SelectParams norms(DeviceBuffer colNorms, DeviceBuffer rowNorms) {
    this.colNorms = colNorms == null ? 0 : colNorms.address();
    this.rowNorms = rowNorms == null ? 0 : rowNorms.address();
    return this;
  }

  /** Norms at raw device addresses (0: none). */
  public SelectParams norms(long colNorms, long rowNorms) {
    this.colNorms = colNorms;
    this.rowNorms = rowNorms;
    return this;
  }

  public SelectParams clampZero(boolean clamp) {
    this.clampZero = clamp;
    return this;
  }

  /** One bit per id (bit id % 64 of word id / 64), the same mask for every row; null = accept all. */
  public SelectParams acceptBits(DeviceBuffer bits) {
    this.acceptBits = bits == null ? 0 : bits.address();
    this.acceptRowWords = 0;
    return this;
  }

  /**
   * Accept masks at a device address: row r's mask starts {@code r * rowWords} 64-bit words after
   * {@code address} (rowWords 0: one mask for all rows; address 0: accept all).
   */
  public SelectParams acceptBits(long address, long rowWords) {
    this.acceptBits = address;
    this.acceptRowWords = rowWords;
    return this;
  }

  /** Hierarchical partition: split each row into chunks of {@code chunkLen} columns. */
  public SelectParams chunks(int chunksPerRow, int chunkLen) {
    this.chunksPerRow = chunksPerRow;
    this.chunkLen = chunkLen;
    return this;
  }

  public SelectParams copy() {
    SelectParams p = new SelectParams();
    p.in = in; p.inIdx = inIdx; p.colNorms = colNorms; p.rowNorms = rowNorms; p.acceptBits = acceptBits;
    p.outK = outK; p.outIdx = outIdx; p.rowLens = rowLens; p.inRowStride = inRowStride; p.idxOffset = idxOffset;
    p.outRowStride = outRowStride; p.acceptRowWords = acceptRowWords; p.rows = rows; p.len = len; p.k = k; p.chunksPerRow = chunksPerRow;
    p.chunkLen = chunkLen; p.inScale = inScale; p.outScale = outScale; p.clampZero = clampZero;
    return p;
  }

  void validate() {
    if (k < 1 || k > KSelect.MAX_K) {
      throw new IllegalArgumentException("k must be in [1, " + KSelect.MAX_K + "]: " + k);
    }
    if (rows < 0 || len < 0 || chunksPerRow < 1 || (long) chunksPerRow * chunkLen < len) {
      throw new IllegalArgumentException("bad shape: rows=" + rows + " len=" + len + " chunks=" + chunksPerRow
          + " chunkLen=" + chunkLen);
    }
    if (in == 0 || outK == 0 || outIdx == 0) {
      throw new IllegalArgumentException("input and output buffers are required");
    }
  }

  public byte[] encode() {
    return LAYOUT.encode(this);
  }
}
