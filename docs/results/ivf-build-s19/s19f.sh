#!/bin/bash
# session 19, review: one staging loop for query rows, index slabs and k-means points; the cuda classes that upload
# through it, then the codec's GPU suite
here=$(cd "$(dirname "$0")" && pwd)
[ -x /tmp/jre/bin/java ] || tar xJf "$here/jre.tar.xz" -C /tmp
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export GV_REQUIRE_GPU=1
/tmp/jre/bin/java -ea --enable-native-access=ALL-UNNAMED -Xmx48g -cp "$here/lib/*" -Dgpuvectors.gpu.pass_graphs=false \
  org.junit.platform.console.ConsoleLauncher execute --disable-banner --details=summary --disable-ansi-colors \
  --select-class org.gpuvectors.cuda.QueryRowsGpuTest --select-class org.gpuvectors.cuda.GpuAssignmentGpuTest \
  --select-class org.gpuvectors.cuda.GpuFlatIndexGpuTest --select-class org.gpuvectors.cuda.GpuIvfFlatIndexGpuTest \
  --select-class org.gpuvectors.cuda.LanesGpuTest --reports-dir "$OUT/junit" > "$OUT/tests.log" 2>&1
echo "rc $?"
grep -E 'tests (successful|failed|aborted|skipped)|MethodSource|=>' "$OUT/tests.log" | head -30
rm -rf "$OUT/junit"
bash "$here/run-gpu.sh" codec-tests 2>&1 | grep -E 'tests (successful|failed|aborted|skipped)|MethodSource|=>' | tail -8
