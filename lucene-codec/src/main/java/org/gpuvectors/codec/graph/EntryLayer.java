package org.gpuvectors.codec.graph;

import java.io.IOException;
import java.util.Arrays;
import org.apache.lucene.codecs.hnsw.FlatVectorsScorer;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.util.RamUsageEstimator;
import org.apache.lucene.util.hnsw.RandomVectorScorer;

/**
 * A graph's entry points grouped under a few heads, for the CPU's start of a walk ({@link BeamSearch}): it scores the
 * heads, then only the entry points grouped under the best heads, instead of every entry point. The GPU scores every
 * entry point in parallel at no cost to speak of; on the CPU they were most of a walk's work: Fashion-MNIST's 60,000
 * vectors have 500 entry points, 42 % of the 1,183 vectors a walk of width 64 scored, and every walk of a merge from
 * graphs ({@link GraphMerge}) scores them too.
 *
 * <p>The heads are a farthest-first cover of the entry points (the first entry point, then each time the one least
 * similar to every head so far), about the square root of their count; each entry point belongs to its most similar
 * head (itself, for a head). A start scores every head and takes the groups of the most similar heads, best first,
 * until they hold {@link #MEMBERS_PER_WIDTH} x the walk's width entry points and at least {@link #MIN_GROUPS} groups.
 * Entry points left out can still be reached by the walk: the graph links them like every other vector. Built once
 * per segment field, at its first CPU walk ({@link GraphField#entryLayer}), from the vectors' own scores: about
 * (entry points)^1.5 of them (500 entry points: 11,500).
 *
 * <p>Immutable; thread-safe.
 */
final class EntryLayer {

  /** Graphs with fewer entry points score them all (the layer would save little). */
  static final int MIN_ENTRY_POINTS = 128;
  /** A start takes the groups of the best heads until they hold this many entry points per unit of beam width. */
  static final int MEMBERS_PER_WIDTH = 2;
  /** A start takes at least this many groups. */
  static final int MIN_GROUPS = 2;

  private final int[] heads;
  /** The entry points grouped by head: group h is {@code members[offsets[h] .. offsets[h + 1])}, its head first. */
  private final int[] members;
  private final int[] offsets;

  private EntryLayer(int[] heads, int[] members, int[] offsets) {
    this.heads = heads;
    this.members = members;
    this.offsets = offsets;
  }

  /** The layer over {@code entryPoints} (ordinals of {@code vectors}), or null when there are too few to group. */
  static EntryLayer build(int[] entryPoints, FlatVectorsScorer scorers, VectorSimilarityFunction similarity,
                          FloatVectorValues vectors) throws IOException {
    int e = entryPoints.length;
    if (e < MIN_ENTRY_POINTS) {
      return null;
    }
    int headCount = (int) Math.ceil(Math.sqrt(e));
    int[] headOf = new int[e]; // position of each entry point's head in heads
    float[] best = new float[e]; // its score against that head (higher is more similar)
    Arrays.fill(best, Float.NEGATIVE_INFINITY);
    int[] heads = new int[headCount];
    FloatVectorValues values = vectors.copy();
    int next = 0; // position in entryPoints of the next head
    for (int h = 0; h < headCount; h++) {
      heads[h] = entryPoints[next];
      float[] head = values.vectorValue(entryPoints[next]).clone(); // the scorer may read values' buffer again
      RandomVectorScorer scorer = scorers.getRandomVectorScorer(similarity, vectors.copy(), head);
      int farthest = -1;
      for (int i = 0; i < e; i++) {
        float s = i == next ? Float.POSITIVE_INFINITY : scorer.score(entryPoints[i]); // a head belongs to itself
        if (s > best[i]) {
          best[i] = s;
          headOf[i] = h;
        }
        if (farthest < 0 || best[i] < best[farthest]) {
          farthest = i;
        }
      }
      next = farthest;
    }
    // group by head (counting sort), each head first in its group
    int[] offsets = new int[headCount + 1];
    for (int i = 0; i < e; i++) {
      offsets[headOf[i] + 1]++;
    }
    for (int h = 0; h < headCount; h++) {
      offsets[h + 1] += offsets[h];
    }
    int[] members = new int[e];
    int[] fill = Arrays.copyOf(offsets, headCount);
    for (int h = 0; h < headCount; h++) {
      members[fill[h]++] = heads[h];
    }
    for (int i = 0; i < e; i++) {
      if (best[i] != Float.POSITIVE_INFINITY) { // not a head
        members[fill[headOf[i]]++] = entryPoints[i];
      }
    }
    return new EntryLayer(heads, members, offsets);
  }

  /** The heads' ordinals (read only). */
  int[] heads() {
    return heads;
  }

  /**
   * The entry points a start of a walk of {@code width} takes after scoring the heads ({@code headScores[h]}: head
   * h's score, higher is better): the groups of the best heads (ties: the earlier head), each with its head first.
   */
  int[] start(float[] headScores, int width) {
    long target = Math.min(members.length, (long) MEMBERS_PER_WIDTH * width);
    boolean[] used = new boolean[heads.length];
    int[] start = new int[members.length];
    int taken = 0;
    // the next best head, a few times per walk: a scan of the ~sqrt(E) scores each time, no sort, no boxing
    for (int groups = 0; groups < heads.length && (taken < target || groups < MIN_GROUPS); groups++) {
      int h = -1;
      for (int c = 0; c < heads.length; c++) {
        if (!used[c] && (h < 0 || headScores[c] > headScores[h])) {
          h = c; // ties: the earlier head
        }
      }
      used[h] = true;
      int from = offsets[h];
      int count = offsets[h + 1] - from;
      System.arraycopy(members, from, start, taken, count);
      taken += count;
    }
    return Arrays.copyOf(start, taken);
  }

  /** Entry points in all (each in one group). */
  int size() {
    return members.length;
  }

  long ramBytesUsed() {
    return RamUsageEstimator.shallowSizeOfInstance(EntryLayer.class) + RamUsageEstimator.sizeOf(heads)
        + RamUsageEstimator.sizeOf(members) + RamUsageEstimator.sizeOf(offsets);
  }
}
