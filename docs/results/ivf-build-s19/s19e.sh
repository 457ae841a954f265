#!/bin/bash
# session 19: rankAndWrite (common.cuh) shared by the radix selections' end and the re-rank's own selection:
# KSelectGpuTest's radix paths, RerankSelectGpuTest, GpuIvfPqIndexGpuTest
here=$(cd "$(dirname "$0")" && pwd)
[ -x /tmp/jre/bin/java ] || tar xJf "$here/jre.tar.xz" -C /tmp
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export GV_REQUIRE_GPU=1
/tmp/jre/bin/java -ea --enable-native-access=ALL-UNNAMED -Xmx48g -cp "$here/lib/*" -Dgpuvectors.gpu.pass_graphs=false \
  org.junit.platform.console.ConsoleLauncher execute --disable-banner --details=summary --disable-ansi-colors \
  --select-method 'org.gpuvectors.cuda.KSelectGpuTest#radixMatchesOracle(org.gpuvectors.cuda.KSelectGpuTest$RadixPath)' \
  --select-class org.gpuvectors.cuda.RerankSelectGpuTest --select-class org.gpuvectors.cuda.GpuIvfPqIndexGpuTest \
  --reports-dir "$OUT/junit" > "$OUT/tests.log" 2>&1
echo "rc $?"
grep -E 'tests (successful|failed|aborted|skipped)|MethodSource|=>' "$OUT/tests.log" | head -30
rm -rf "$OUT/junit"
