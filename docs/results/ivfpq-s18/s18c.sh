#!/bin/bash
# session 18: GPU tests of the paths the typical-row radix block touches, then the codec suite
here=$(pwd)/.device
[ -x /tmp/jre/bin/java ] || tar xJf "$here/jre.tar.xz" -C /tmp
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} GV_REQUIRE_GPU=1
mkdir -p $OUT/t
timeout 330 /tmp/jre/bin/java -ea --enable-native-access=ALL-UNNAMED -Xmx48g -cp "$here/lib/*" -Dgpuvectors.gpu.pass_graphs=false \
  org.junit.platform.console.ConsoleLauncher execute --disable-banner --details=summary --disable-ansi-colors \
  --select-method 'org.gpuvectors.cuda.KSelectGpuTest#radixMatchesOracle(org.gpuvectors.cuda.KSelectGpuTest$RadixPath)' \
  --select-class org.gpuvectors.cuda.GpuIvfPqIndexGpuTest --select-class org.gpuvectors.cuda.GpuFlatIndexGpuTest \
  --select-class org.gpuvectors.cuda.RerankSelectGpuTest --select-class org.gpuvectors.cuda.LanesGpuTest \
  --select-class org.gpuvectors.cuda.QueryRowsGpuTest --select-class org.gpuvectors.cuda.PassGraphsGpuTest \
  --reports-dir $OUT/t/junit > $OUT/t/t.log 2>&1
grep -E '^\[gpu-vectors\] (radix|IVF-PQ)|tests (successful|failed|aborted|skipped)|MethodSource|=>' $OUT/t/t.log | head -30
OUT=$OUT/c timeout 250 bash .device/run-gpu.sh codec-tests > /dev/null 2>&1
grep -E 'tests (successful|failed|aborted|skipped)' $OUT/c/codec-tests.log
rm -rf $OUT/c/junit-codec $OUT/c/gpu.txt
