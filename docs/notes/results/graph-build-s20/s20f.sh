#!/bin/bash
# session 20, call 6: double-buffered staged uploads: the cuda tests of the upload paths, the graph-build GPU tests,
# the steps benchmark, then every build of IndexBuildBenchmark (GPU 5 times, CPU once) against Lucene HNSW
here=$(cd "$(dirname "$0")" && pwd)
[ -x /tmp/jre/bin/java ] || tar xJf "$here/jre.tar.xz" -C /tmp
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export GV_REQUIRE_GPU=1
j=(/tmp/jre/bin/java -ea --enable-native-access=ALL-UNNAMED -Xmx48g -cp "$here/lib/*" --add-modules jdk.incubator.vector)
"${j[@]}" -Dgpuvectors.gpu.pass_graphs=false org.junit.platform.console.ConsoleLauncher execute --disable-banner \
  --details=summary --disable-ansi-colors \
  --select-class org.gpuvectors.cuda.QueryRowsGpuTest --select-class org.gpuvectors.cuda.GpuAssignmentGpuTest \
  --select-class org.gpuvectors.cuda.GpuFlatIndexGpuTest --select-class org.gpuvectors.codec.gpu.GpuKnnGraphTests \
  --select-class org.gpuvectors.codec.graph.GpuEntryPointsTests \
  --reports-dir "$OUT/junit" > "$OUT/tests.log" 2>&1
echo "tests rc $?"
grep -E 'tests (successful|failed|aborted|skipped)|MethodSource|=>' "$OUT/tests.log" | head -30
rm -rf "$OUT/junit"
"${j[@]}" org.gpuvectors.codec.gpu.GraphBuildStepsBenchmark /tmp/fmnist 7 2>&1 | grep -v WARNING | tee "$OUT/graph-build-steps.log"
BENCH_ARGS="5 3" bash "$here/run-gpu.sh" build 2>&1 | grep -E 'build [0-9]|^graph|^lucene|^ivf|^flat|^system' | tail -40
