package org.gpuvectors.codec.graph;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;
import org.apache.lucene.index.FloatVectorValues;
import org.gpuvectors.codec.index.Metric;

/**
 * An approximate k-NN graph by NN-descent (Dong, Charikar, Li, "Efficient k-nearest neighbor graph
 * construction for generic similarity measures", WWW 2011): start from random neighbours, then
 * repeatedly compare the neighbours of each vector's neighbours ("a neighbour of a neighbour is
 * likely a neighbour"), until an iteration changes fewer than {@link #DELTA} of the entries.
 *
 * <p>Deterministic whatever the parallelism: random choices come from generators seeded by ordinal
 * (and iteration), and each iteration first fixes every vector's join sets, then lets each vector
 * update only its own list from them (the "pull" form of the local join: vector {@code u} compares
 * itself with every member of the join sets it belongs to, rather than a join set's owner updating
 * the lists of its members), so no two threads write the same list.
 */
final class NnDescent {

  /** New (and old) neighbours sampled per vector and iteration, forward and reverse each (NN-descent's rho * k). */
  static final int SAMPLE = 16;
  /** Iterations at most. */
  static final int MAX_ITERATIONS = 12;
  /** Stop once an iteration changes fewer than this fraction of the n * k entries. */
  static final double DELTA = 0.001;

  private static final int BLOCK = 256;

  private NnDescent() {}

  /** See {@link KnnFinder#knn}; {@code seed} drives the random start and the samples. */
  static int[] knn(FloatVectorValues vectors, int k, Metric metric, long seed) throws IOException {
    return knn(vectors, k, metric, seed, (u, candidates) -> {}, MAX_ITERATIONS);
  }

  /**
   * Candidates a vector's list starts from ({@link #knn(FloatVectorValues, int, Metric, long, Start, int)}); called from
   * several threads at once, each call for another vector.
   */
  interface Start {
    /** Hands {@code candidates} the ordinals vector {@code u}'s list starts from (any number, any order). */
    void candidates(int u, IntConsumer candidates) throws IOException;
  }

  /**
   * NN-descent whose lists start from {@code start}'s candidates (a merge starts from the merged segments' graphs,
   * {@link GraphMerge}), filled up to k with random vectors, as {@link #knn(FloatVectorValues, int, Metric, long)}
   * starts from random vectors alone, for at most {@code maxIterations} iterations (0: the start's best k).
   * Deterministic when {@code start} is.
   */
  static int[] knn(FloatVectorValues vectors, int k, Metric metric, long seed, Start start, int maxIterations)
      throws IOException {
    int n = vectors.size();
    if (n <= k + 1) {
      return ExactKnn.knn(vectors, k, metric); // every other vector is a neighbour
    }
    float[] norms = VectorDistances.norms(vectors, metric);
    NeighborList[] lists = new NeighborList[n];
    ThreadLocal<Worker> workers = ThreadLocal.withInitial(() -> new Worker(vectors, metric, norms, n));
    parallel(n, (worker, u) -> {
      NeighborList list = lists[u] = new NeighborList(k);
      float[] x = worker.distances.vector(u);
      IOException[] failed = new IOException[1];
      start.candidates(u, j -> {
        if (j != u && j >= 0 && failed[0] == null) {
          try {
            list.insert(worker.distances.distanceTo(x, u, j), j);
          } catch (IOException e) {
            failed[0] = e;
          }
        }
      });
      if (failed[0] != null) {
        throw failed[0];
      }
      SplittableRandom random = new SplittableRandom(mix(seed, u, -1));
      while (list.size() < k) {
        int j = random.nextInt(n);
        if (j != u && list.contains(j) == false) {
          list.insert(worker.distances.distanceTo(x, u, j), j);
        }
      }
    }, workers);

    int[][] joinNew = new int[n][];
    int[][] joinOld = new int[n][];
    for (int iteration = 0; iteration < maxIterations; iteration++) {
      sampleJoinSets(lists, joinNew, joinOld, seed, iteration);
      Members members = Members.of(joinNew, joinOld, n);
      long[] changes = new long[n];
      parallel(n, (worker, u) -> changes[u] = worker.join(u, lists[u], members, joinNew, joinOld), workers);
      long changed = 0;
      for (long c : changes) {
        changed += c;
      }
      if (changed < DELTA * n * k) {
        break;
      }
    }
    int[] out = new int[n * k];
    for (int u = 0; u < n; u++) {
      lists[u].copyIds(out, u * k, k);
    }
    return out;
  }

  /**
   * Fixes every vector's join sets for an iteration: up to {@link #SAMPLE} of its new neighbours
   * (nearest first; they are marked old in its list, so they are joined as new once) and of its old
   * ones, plus up to {@link #SAMPLE} vectors that list it among their sampled new (old) neighbours,
   * chosen by reservoir sampling with generators seeded by ordinal and iteration.
   */
  private static void sampleJoinSets(NeighborList[] lists, int[][] joinNew, int[][] joinOld, long seed, int iteration) {
    int n = lists.length;
    int[][] forwardNew = new int[n][];
    int[][] forwardOld = new int[n][];
    for (int v = 0; v < n; v++) {
      NeighborList list = lists[v];
      int[] fresh = new int[SAMPLE];
      int[] old = new int[SAMPLE];
      int nf = 0;
      int no = 0;
      for (int p = 0; p < list.size(); p++) {
        if (list.isNew[p]) {
          if (nf < SAMPLE) {
            fresh[nf++] = list.ids[p];
            list.isNew[p] = false;
          }
        } else if (no < SAMPLE) {
          old[no++] = list.ids[p];
        }
      }
      forwardNew[v] = Arrays.copyOf(fresh, nf);
      forwardOld[v] = Arrays.copyOf(old, no);
    }
    Reservoirs reverseNew = new Reservoirs(n, mix(seed, iteration, 1));
    Reservoirs reverseOld = new Reservoirs(n, mix(seed, iteration, 2));
    for (int v = 0; v < n; v++) {
      for (int u : forwardNew[v]) {
        reverseNew.offer(u, v);
      }
      for (int u : forwardOld[v]) {
        reverseOld.offer(u, v);
      }
    }
    for (int v = 0; v < n; v++) {
      joinNew[v] = union(forwardNew[v], reverseNew.sample(v));
      joinOld[v] = union(forwardOld[v], reverseOld.sample(v));
    }
  }

  /** {@code a} then the members of {@code b} not in {@code a} (both short). */
  private static int[] union(int[] a, int[] b) {
    int[] out = Arrays.copyOf(a, a.length + b.length);
    int size = a.length;
    outer:
    for (int x : b) {
      for (int i = 0; i < size; i++) {
        if (out[i] == x) {
          continue outer;
        }
      }
      out[size++] = x;
    }
    return Arrays.copyOf(out, size);
  }

  /** Per vector, a uniform sample of at most {@link #SAMPLE} of the ordinals offered to it. */
  private static final class Reservoirs {
    private final int[][] slots;
    private final int[] offered;
    private final long seed;

    Reservoirs(int n, long seed) {
      this.slots = new int[n][];
      this.offered = new int[n];
      this.seed = seed;
    }

    void offer(int owner, int value) {
      int seen = offered[owner]++;
      if (seen < SAMPLE) {
        if (slots[owner] == null) {
          slots[owner] = new int[SAMPLE];
        }
        slots[owner][seen] = value;
      } else {
        long r = Long.remainderUnsigned(mix(seed, owner, seen), seen + 1);
        if (r < SAMPLE) {
          slots[owner][(int) r] = value;
        }
      }
    }

    int[] sample(int owner) {
      return slots[owner] == null ? new int[0] : Arrays.copyOf(slots[owner], Math.min(SAMPLE, offered[owner]));
    }
  }

  /**
   * For each vector u, the join sets it belongs to: {@code owners[offsets[u] .. offsets[u + 1])}, with
   * {@code asNew} whether it is in the owner's new set (else its old set). Built in ordinal order.
   */
  private record Members(int[] offsets, int[] owners, boolean[] asNew) {
    static Members of(int[][] joinNew, int[][] joinOld, int n) {
      int[] offsets = new int[n + 1];
      for (int v = 0; v < n; v++) {
        for (int u : joinNew[v]) {
          offsets[u + 1]++;
        }
        for (int u : joinOld[v]) {
          offsets[u + 1]++;
        }
      }
      for (int u = 0; u < n; u++) {
        offsets[u + 1] += offsets[u];
      }
      int[] next = offsets.clone();
      int[] owners = new int[offsets[n]];
      boolean[] asNew = new boolean[offsets[n]];
      for (int v = 0; v < n; v++) {
        for (int u : joinNew[v]) {
          owners[next[u]] = v;
          asNew[next[u]++] = true;
        }
        for (int u : joinOld[v]) {
          owners[next[u]++] = v;
        }
      }
      return new Members(offsets, owners, asNew);
    }
  }

  /** One thread's vector copies and "compared already" marks. */
  private static final class Worker {
    final VectorDistances distances;
    private final int[] stamp;
    private int epoch;

    Worker(FloatVectorValues vectors, Metric metric, float[] norms, int n) {
      try {
        this.distances = VectorDistances.of(vectors, metric, norms);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      this.stamp = new int[n];
    }

    /**
     * Vector u's side of the local joins it takes part in: for each join set it belongs to, compare u
     * with the set's other members (new with new and old; old only with new), each candidate once.
     *
     * @return how many entries of u's list changed
     */
    long join(int u, NeighborList list, Members members, int[][] joinNew, int[][] joinOld) throws IOException {
      if (++epoch == 0) {
        Arrays.fill(stamp, 0);
        epoch = 1;
      }
      stamp[u] = epoch;
      float[] x = distances.vector(u);
      long changed = 0;
      for (int m = members.offsets()[u]; m < members.offsets()[u + 1]; m++) {
        int owner = members.owners()[m];
        changed += offer(u, x, list, joinNew[owner]);
        if (members.asNew()[m]) {
          changed += offer(u, x, list, joinOld[owner]);
        }
      }
      return changed;
    }

    private long offer(int u, float[] x, NeighborList list, int[] candidates) throws IOException {
      long changed = 0;
      for (int w : candidates) {
        if (stamp[w] != epoch) {
          stamp[w] = epoch;
          float d = distances.distanceTo(x, u, w);
          if (list.insert(d, w)) {
            changed++;
          }
        }
      }
      return changed;
    }
  }

  private interface Task {
    void run(Worker worker, int u) throws IOException;
  }

  /** Runs {@code task} for every ordinal, blocks of them in parallel on the common pool. */
  private static void parallel(int n, Task task, ThreadLocal<Worker> workers) throws IOException {
    try {
      IntStream.range(0, (n + BLOCK - 1) / BLOCK).parallel().forEach(b -> {
        Worker worker = workers.get();
        try {
          for (int u = b * BLOCK, end = Math.min(n, u + BLOCK); u < end; u++) {
            task.run(worker, u);
          }
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  /** A well-mixed 64-bit value of three inputs (SplitMix64's finaliser): per-ordinal random streams. */
  static long mix(long seed, long a, long b) {
    long z = seed + 0x9E3779B97F4A7C15L * (a + 1) + 0xC2B2AE3D27D4EB4FL * (b + 2);
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
