package org.gpuvectors.codec;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.search.AcceptDocs;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.util.BitSet;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.FixedBitSet;
import org.gpuvectors.codec.gpu.GpuSegment;

/**
 * Turns a search's accepted documents into the accept mask the GPU kernels read: bit {@code ord %
 * 64} of word {@code ord / 64} for each accepted vector ordinal, and the number accepted.
 *
 * <p>Without a per-query cost that scales with the segment where it can be avoided:
 * <ul>
 *   <li>no filter and no deletions ({@code bits() == null}): no mask;
 *   <li>deletions only: Lucene hands every query the segment's own live-docs {@link Bits}, so its mask
 *       is built once and kept (per field, for that {@code Bits} instance: a new deletion generation
 *       brings a new instance);
 *   <li>a filter over a field whose ordinals are its doc ids (every document up to the last vector
 *       has one, the usual case): a {@link FixedBitSet}'s words are the mask as they are (no copy);
 *       a sparse {@link BitSet} is walked over its set bits only;
 *   <li>otherwise (documents without vectors in between, and a filter): ordinal by ordinal.
 * </ul>
 *
 * <p>The live-docs mask kept per field is also what the GPU service uses to search this segment
 * ahead, for a query that another segment of the index asked first ({@link #standing}).
 */
final class AcceptMasks {

  /**
   * Accepted ordinals: {@code bits} (null: all) and how many there are. {@code standing}: no filter
   * applied (all vectors, or the live ones: the segment's {@link GpuSegment.Standing}), and {@code
   * token} the live-docs instance it was built from (null when there are no deletions).
   */
  record Mask(long[] bits, int count, boolean standing, Object token) {
    Mask(long[] bits, int count) {
      this(bits, count, false, null);
    }
  }

  private record LiveMask(Bits source, Mask mask) {}

  private final Map<String, LiveMask> liveMasks = new ConcurrentHashMap<>();

  /** The mask of {@code accept} over {@code vectors} (a field of this segment). */
  Mask of(String field, AcceptDocs accept, KnnVectorValues vectors) throws IOException {
    Bits bits = accept == null ? null : accept.bits();
    int size = vectors.size();
    if (bits == null) {
      return new Mask(null, size, true, null);
    }
    boolean denseOrds = size == 0 || vectors.ordToDoc(size - 1) == size - 1; // ords increase with docs
    if (denseOrds && bits instanceof FixedBitSet fixed) {
      return new Mask(fixed.getBits(), countBelow(fixed.getBits(), size)); // no copy
    }
    if (bits instanceof BitSet bitSet) {
      long[] words = fromBitSet(bitSet, vectors, denseOrds);
      return new Mask(words, countBelow(words, size));
    }
    // neither a filter's BitSet nor absent: the segment's live docs (the same instance for every
    // query of this reader generation) — built once, reused by later queries
    LiveMask cached = liveMasks.get(field);
    if (cached != null && cached.source() == bits) {
      return cached.mask();
    }
    Mask built = byOrdinal(bits, vectors);
    Mask mask = new Mask(built.bits(), built.count(), true, bits);
    liveMasks.put(field, new LiveMask(bits, mask));
    return mask;
  }

  /** What unfiltered searches of {@code field} accepted last: the cached live-docs mask, or all. */
  GpuSegment.Standing standing(String field) {
    LiveMask live = liveMasks.get(field);
    return live == null ? GpuSegment.Standing.ALL : new GpuSegment.Standing(live.source(), live.mask().bits());
  }

  private static long[] fromBitSet(BitSet accepted, KnnVectorValues vectors, boolean denseOrds)
      throws IOException {
    int size = vectors.size();
    long[] words = new long[Math.max(1, (size + 63) >>> 6)];
    int maxDoc = accepted.length();
    if (denseOrds) {
      for (int doc = accepted.nextSetBit(0);
          doc < size;
          doc = doc + 1 < maxDoc ? accepted.nextSetBit(doc + 1) : DocIdSetIterator.NO_MORE_DOCS) {
        words[doc >>> 6] |= 1L << doc;
      }
      return words;
    }
    // doc -> ord through the vectors' own iterator (advance is cheap on the sparse ord-to-doc map)
    KnnVectorValues.DocIndexIterator it = vectors.iterator();
    for (int doc = accepted.nextSetBit(0);
        doc != DocIdSetIterator.NO_MORE_DOCS;
        doc = doc + 1 < maxDoc ? accepted.nextSetBit(doc + 1) : DocIdSetIterator.NO_MORE_DOCS) {
      int at = it.docID() >= doc ? it.docID() : it.advance(doc);
      if (at == DocIdSetIterator.NO_MORE_DOCS) {
        break;
      }
      if (at == doc) {
        int ord = it.index();
        words[ord >>> 6] |= 1L << ord;
      }
    }
    return words;
  }

  private static Mask byOrdinal(Bits acceptDocs, KnnVectorValues vectors) {
    int size = vectors.size();
    long[] words = new long[Math.max(1, (size + 63) >>> 6)];
    int count = 0;
    for (int ord = 0; ord < size; ord++) {
      if (acceptDocs.get(vectors.ordToDoc(ord))) {
        words[ord >>> 6] |= 1L << ord;
        count++;
      }
    }
    return new Mask(words, count);
  }

  /** Heap held by the cached live-docs masks. */
  long ramBytesUsed() {
    long bytes = 0;
    for (LiveMask live : liveMasks.values()) {
      long[] words = live.mask().bits();
      bytes += words == null ? 0 : org.apache.lucene.util.RamUsageEstimator.sizeOf(words);
    }
    return bytes;
  }

  /** Set bits among the first {@code size} of {@code words}. */
  static int countBelow(long[] words, int size) {
    int full = size >>> 6;
    int count = 0;
    for (int i = 0; i < full; i++) {
      count += Long.bitCount(words[i]);
    }
    int rest = size & 63;
    if (rest != 0) {
      count += Long.bitCount(words[full] & ((1L << rest) - 1));
    }
    return count;
  }
}
