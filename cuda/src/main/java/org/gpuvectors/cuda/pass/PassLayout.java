package org.gpuvectors.cuda.pass;

import org.gpuvectors.cuda.Metric;
import org.gpuvectors.cuda.runtime.PinnedHostBuffer;
import java.util.List;

/**
 * Where a {@link BatchSearch} pass's inputs and results lie on the device, and its packed inputs on the host.
 *
 * <p>On the device one block holds the packed queries and norms, the masks (8-byte aligned) and the direct groups'
 * queries (16-byte aligned), in that order: the first two go up in one copy, from the same layout in the pass slot's
 * pinned buffer. Another block holds the distances, then the ids: they come down in one copy. Direct groups
 * ({@link BatchSearch#DIRECT_UPLOAD_QUERIES} queries or more, not cosine) are copied from their own arrays, block
 * by block ({@link QueryUploads}), and their norms computed on the device.
 */
final class PassLayout {
  final boolean[] walked; // groups walked in the graph table launch, or null ({@link BatchSearch#tableWalks})
  final ScanTable flats; // the flat scan table's members, or null ({@link BatchSearch#planScanTable})
  final boolean[] direct; // queries uploaded from the group's own array, norms on the device
  final long[] queryAt; // float offset of the group's queries on the device
  final long[] normsAt; // float offset of their squared norms (L2, packed groups), -1 when none
  final long[] maskAt; // word offset of the group's masks, -1 when none
  final long[] maskRowWords; // words between a group's per-query masks, 0 for a shared mask
  final int[] stride; // elements between a group's result rows: its k, or its scan table's largest k
  final long[] outAt; // element offset of the group's results ({@link BatchSearch#placeResults} sets them)
  // element offset of a half-scanned flat group's certificate inputs (4 floats a query, after every group's results,
  // in the distances; a half scan table's members one after another), -1 for other groups ({@link
  // ResidentIndex#writesCertificates}, {@link ScanTable#half})
  final long[] statsAt;
  final long maskWords;
  final long masksAt; // byte offset of the masks
  final long directAt; // byte offset of the direct groups' queries
  final long queryFloats; // floats of the input block up to the end of the direct groups' queries
  final long outElements;
  final float[] packed; // the packed groups' queries (cosine: normalised) and norms
  final long[] masks;
  final boolean anyDirect;
  /** Whether the packed inputs go up, and the results come down, through the slot's pinned buffers. */
  final boolean staged;

  PassLayout(List<SearchGroup> groups) {
    int count = groups.size();
    walked = BatchSearch.tableWalks(groups);
    flats = BatchSearch.planScanTable(groups, walked);
    direct = new boolean[count];
    queryAt = new long[count];
    normsAt = new long[count];
    maskAt = new long[count];
    maskRowWords = new long[count];
    stride = new int[count];
    outAt = new long[count];
    statsAt = new long[count];
    long packedFloats = 0; // the packed groups' queries and norms come first on the device, then the direct ones
    long words = 0;
    long out = 0;
    boolean anyDirectGroup = false;
    for (int g = 0; g < count; g++) {
      SearchGroup group = groups.get(g);
      direct[g] = group.numQueries() >= BatchSearch.DIRECT_UPLOAD_QUERIES
          && !ResidentIndex.takesNormalisedQueries(group.index());
      anyDirectGroup |= direct[g];
      if (direct[g] == false) {
        queryAt[g] = packedFloats;
        packedFloats += (long) group.numQueries() * group.index().dims();
      }
      normsAt[g] = -1;
      if (direct[g] == false && group.index().metric() == Metric.L2) {
        normsAt[g] = packedFloats; // ||q||^2 right after the group's queries: no norm kernel per small group
        packedFloats += group.numQueries();
      }
      int groupWords = SearchGroup.maskWords(group.index().size());
      maskAt[g] = -1;
      if (group.sharedMask() != null) {
        maskAt[g] = words;
        words += groupWords;
      } else if (group.queryMasks() != null) {
        maskAt[g] = words;
        maskRowWords[g] = groupWords;
        words += (long) groupWords * group.numQueries();
      }
      stride[g] = flats != null && flats.member(g) ? flats.stride() : group.k();
      outAt[g] = out;
      out += (long) group.numQueries() * stride[g];
    }
    long tableStats = out;
    if (flats != null && flats.half()) {
      out += 4L * flats.rows();
    }
    for (int g = 0; g < count; g++) {
      SearchGroup group = groups.get(g);
      boolean alone = (flats == null || !flats.member(g)) && (walked == null || !walked[g]);
      statsAt[g] = flats != null && flats.half() && flats.member(g) ? tableStats + 4L * flats.firstRow(g) : -1;
      if (alone && group.numQueries() > 0 && ResidentIndex.of(group.index()).writesCertificates(group)) {
        statsAt[g] = out;
        out += 4L * group.numQueries();
      }
    }
    anyDirect = anyDirectGroup;
    maskWords = words;
    outElements = out;
    masksAt = (4L * packedFloats + 7) & ~7L;
    directAt = (masksAt + 8L * maskWords + 15) & ~15L;
    long floats = directAt / 4;
    for (int g = 0; g < count; g++) {
      if (direct[g]) {
        queryAt[g] = floats;
        floats += (long) groups.get(g).numQueries() * groups.get(g).index().dims();
      }
    }
    queryFloats = floats;
    if (queryFloats > Integer.MAX_VALUE - 8 || maskWords > Integer.MAX_VALUE - 8 || outElements > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("batch too large: " + queryFloats + " query floats, " + maskWords
          + " mask words, " + outElements + " results");
    }
    packed = new float[(int) packedFloats];
    masks = new long[(int) maskWords];
    for (int g = 0; g < count; g++) {
      BatchSearch.pack(groups.get(g), direct[g] ? null : packed, (int) queryAt[g], (int) normsAt[g], masks,
          (int) maskAt[g]);
    }
    staged = masksAt + 8L * masks.length <= PinnedHostBuffer.MAX_BYTES && 8L * outElements <= PinnedHostBuffer.MAX_BYTES;
  }

  /** Bytes of the device's input block: queries, norms and masks. */
  long inputBytes() {
    return Math.max(4L * queryFloats, masksAt + 8L * Math.max(1, maskWords));
  }

  /** Bytes of the distances, and of the ids after them, in the device's output block. */
  long outBytes() {
    return 4L * Math.max(1, outElements);
  }
}
