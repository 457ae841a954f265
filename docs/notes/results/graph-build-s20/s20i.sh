#!/bin/bash
# session 20, call 9: A/B of the double-buffered staged uploads on the IVF and graph builds (two JVMs, off then on,
# graph first in each to warm the JIT), 7 builds each on the GPU
here=$(cd "$(dirname "$0")" && pwd)
for mode in false true; do
  echo "== double_buffered_uploads=$mode"
  BENCH_OPTS="-Dgpuvectors.gpu.double_buffered_uploads=$mode" BENCH_ARGS="7 1 graph,ivf_flat,ivf_pq false" \
    bash "$here/run-gpu.sh" build 2>&1 | grep -E 'build [0-9]|^graph|^lucene|^ivf|^system' | tail -26
  cp "$OUT/index-build.log" "$OUT/index-build-double-buffered-$mode.log"
  cp "$OUT/index-build.csv" "$OUT/index-build-double-buffered-$mode.csv"
done
