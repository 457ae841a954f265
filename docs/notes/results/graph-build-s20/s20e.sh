#!/bin/bash
# session 20, call 5: reverse links on the GPU (gv_reverse_rows) and the flush's rows uploaded without a copy: the GPU
# tests touched, the steps benchmark, the Fashion-MNIST graph build against Lucene HNSW on all cores
here=$(cd "$(dirname "$0")" && pwd)
[ -x /tmp/jre/bin/java ] || tar xJf "$here/jre.tar.xz" -C /tmp
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export GV_REQUIRE_GPU=1
j=(/tmp/jre/bin/java -ea --enable-native-access=ALL-UNNAMED -Xmx48g -cp "$here/lib/*" --add-modules jdk.incubator.vector)
"${j[@]}" org.junit.platform.console.ConsoleLauncher execute --disable-banner --details=summary --disable-ansi-colors \
  --select-class org.gpuvectors.codec.gpu.GpuKnnGraphTests --select-class org.gpuvectors.codec.graph.GpuEntryPointsTests \
  --select-class org.gpuvectors.codec.GraphTests --select-class org.gpuvectors.codec.TestGpuGraphFormat \
  --select-class org.gpuvectors.codec.VectorRowsTests --select-class org.gpuvectors.codec.KnnGraphOfIndexTests \
  --select-class org.gpuvectors.cuda.KernelModuleGpuTest \
  --reports-dir "$OUT/junit-codec" > "$OUT/codec-tests.log" 2>&1
echo "tests rc $?"
grep -E 'tests (successful|failed|aborted|skipped)|MethodSource|=>' "$OUT/codec-tests.log" | head -30
rm -rf "$OUT/junit-codec"
"${j[@]}" org.gpuvectors.codec.gpu.GraphBuildStepsBenchmark /tmp/fmnist 7 2>&1 | grep -v WARNING | tee "$OUT/graph-build-steps.log"
BENCH_ARGS="7 3 graph false" bash "$here/run-gpu.sh" build 2>&1 | grep -E 'build [0-9]|^graph|^lucene|^system' | tail -20
