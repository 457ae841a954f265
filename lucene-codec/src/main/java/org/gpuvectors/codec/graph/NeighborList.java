package org.gpuvectors.codec.graph;

import java.util.Arrays;

/**
 * A vector's nearest candidates while a k-NN graph is built: at most {@code capacity} (distance,
 * ordinal) pairs, nearest first, ties by the lower ordinal (so builds are deterministic), each with a
 * "new" flag that NN-descent uses to join only pairs it has not joined before.
 */
final class NeighborList {

  final int[] ids;
  final float[] distances;
  final boolean[] isNew;
  private int size;

  NeighborList(int capacity) {
    ids = new int[capacity];
    distances = new float[capacity];
    isNew = new boolean[capacity];
  }

  /** Empties the list (to reuse it for another vector). */
  void clear() {
    size = 0;
  }

  int size() {
    return size;
  }

  int capacity() {
    return ids.length;
  }

  /** Whether (distance, id) would enter the list (it is not checked for being there already). */
  boolean accepts(float distance, int id) {
    return size < ids.length || before(distance, id, distances[size - 1], ids[size - 1]);
  }

  /** Whether {@code id} is in the list (a linear scan: lists are short). */
  boolean contains(int id) {
    for (int i = 0; i < size; i++) {
      if (ids[i] == id) {
        return true;
      }
    }
    return false;
  }

  /**
   * Inserts (distance, id) marked new if it ranks within the capacity and is not there yet, dropping
   * the farthest when full.
   *
   * @return whether the list changed
   */
  boolean insert(float distance, int id) {
    if (accepts(distance, id) == false || contains(id)) {
      return false;
    }
    int pos = size < ids.length ? size++ : size - 1;
    while (pos > 0 && before(distance, id, distances[pos - 1], ids[pos - 1])) {
      ids[pos] = ids[pos - 1];
      distances[pos] = distances[pos - 1];
      isNew[pos] = isNew[pos - 1];
      pos--;
    }
    ids[pos] = id;
    distances[pos] = distance;
    isNew[pos] = true;
    return true;
  }

  /** The ordinals, nearest first, padded with -1 to {@code length}. */
  void copyIds(int[] out, int offset, int length) {
    int n = Math.min(size, length);
    System.arraycopy(ids, 0, out, offset, n);
    Arrays.fill(out, offset + n, offset + length, -1);
  }

  /** The build's order: nearer first, ties by the lower ordinal. */
  static boolean before(float d1, int id1, float d2, int id2) {
    int c = Float.compare(d1, d2);
    return c < 0 || (c == 0 && id1 < id2);
  }
}
