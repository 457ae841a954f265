#!/bin/bash
# session 20, call 2: the GPU tests of this session's code (own-vector brute force, the farthest-first step, the
# graph build on the GPU), then the Fashion-MNIST graph build against Lucene HNSW on all cores
here=$(cd "$(dirname "$0")" && pwd)
[ -x /tmp/jre/bin/java ] || tar xJf "$here/jre.tar.xz" -C /tmp
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export GV_REQUIRE_GPU=1
j=(/tmp/jre/bin/java -ea --enable-native-access=ALL-UNNAMED -Xmx48g -cp "$here/lib/*")
"${j[@]}" -Dgpuvectors.gpu.pass_graphs=false org.junit.platform.console.ConsoleLauncher execute --disable-banner \
  --details=summary --disable-ansi-colors \
  --select-class org.gpuvectors.cuda.GpuFlatIndexTf32GpuTest --select-class org.gpuvectors.cuda.KernelModuleGpuTest \
  --reports-dir "$OUT/junit" > "$OUT/cuda-tests.log" 2>&1
echo "cuda rc $?"
grep -E '^\[gpu-vectors\]|tests (successful|failed|aborted|skipped)|MethodSource|=>' "$OUT/cuda-tests.log" | head -30
"${j[@]}" --add-modules jdk.incubator.vector org.junit.platform.console.ConsoleLauncher execute --disable-banner \
  --details=summary --disable-ansi-colors \
  --select-class org.gpuvectors.codec.gpu.GpuKnnGraphTests --select-class org.gpuvectors.codec.graph.GpuEntryPointsTests \
  --select-class org.gpuvectors.codec.GraphTests --select-class org.gpuvectors.codec.KnnGraphOfIndexTests \
  --select-class org.gpuvectors.codec.gpu.IvfKnnGraphTests --select-class org.gpuvectors.codec.graph.SmallClustersEntryPointsTests \
  --reports-dir "$OUT/junit-codec" > "$OUT/codec-tests.log" 2>&1
echo "codec rc $?"
grep -E '^\[gpu-vectors\]|tests (successful|failed|aborted|skipped)|MethodSource|=>' "$OUT/codec-tests.log" | head -30
rm -rf "$OUT/junit" "$OUT/junit-codec"
BENCH_ARGS="5 3 graph false" bash "$here/run-gpu.sh" build 2>&1 | grep -E 'build [0-9]|^graph|^lucene|^system' | tail -20
