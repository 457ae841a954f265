#!/bin/bash
# session 18: the radix block for typically short rows; GPU tests of the touched paths, then 10M x 128 nprobe 8
here=$(pwd)/.device
[ -x /tmp/jre/bin/java ] || tar xJf "$here/jre.tar.xz" -C /tmp
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GV_REQUIRE_GPU=1
mkdir -p $OUT/t
timeout 200 /tmp/jre/bin/java -ea --enable-native-access=ALL-UNNAMED -Xmx48g -cp "$here/lib/*" -Dgpuvectors.gpu.pass_graphs=false \
  org.junit.platform.console.ConsoleLauncher execute --disable-banner --details=summary --disable-ansi-colors \
  --select-class org.gpuvectors.cuda.KSelectGpuTest --select-class org.gpuvectors.cuda.GpuIvfPqIndexGpuTest \
  --select-class org.gpuvectors.cuda.RerankSelectGpuTest --select-class org.gpuvectors.cuda.LanesGpuTest \
  --select-class org.gpuvectors.cuda.QueryRowsGpuTest --reports-dir $OUT/t/junit > $OUT/t/t.log 2>&1
grep -E '^\[gpu-vectors\] (radix|IVF-PQ)|tests (successful|failed|aborted|skipped)|MethodSource|=>' $OUT/t/t.log | head -30
base=$OUT
mkdir -p "$base/m10-p8"
OUT="$base/m10-p8" BENCH_PHASES=exact,build,search \
  BENCH_OPTS="-Dgv.scale.params=nprobe=8 -Dgv.scale.candidates=20,30,40,60 -Dgv.scale.single=1000 -Dgv.scale.index=/tmp/gv8" \
  timeout 300 bash .device/run-gpu.sh ivfpqscale 10000000 128 > "$base/m10-p8/run.log" 2>&1
grep -E "list sizes|batch 1|exact: batch|fastest" "$base/m10-p8/ivfpq-scale-10000000-128.log" | cut -c1-330
rm -f $base/m10-p8/gpu.txt $base/m10-p8/run.log
mkdir -p "$base/m10-p8-again"
OUT="$base/m10-p8-again" BENCH_PHASES=exact,search \
  BENCH_OPTS="-Dgv.scale.params=nprobe=8 -Dgv.scale.candidates=20,30,40,60 -Dgv.scale.single=1000 -Dgv.scale.index=/tmp/gv8" \
  timeout 120 bash .device/run-gpu.sh ivfpqscale 10000000 128 > "$base/m10-p8-again/run.log" 2>&1
grep -E "batch 1|exact: batch|fastest" "$base/m10-p8-again/ivfpq-scale-10000000-128.log" | cut -c1-330
rm -f $base/m10-p8-again/gpu.txt $base/m10-p8-again/run.log
