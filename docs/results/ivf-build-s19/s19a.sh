#!/bin/bash
# session 19, call 1: the cuda GPU tests touched since their last GPU run (the nearest-codeword kernel, the
# re-rank's capped selection), as run-gpu.sh runs the cuda suite
here=$(cd "$(dirname "$0")" && pwd)
[ -x /tmp/jre/bin/java ] || tar xJf "$here/jre.tar.xz" -C /tmp
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export GV_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
/tmp/jre/bin/java -ea --enable-native-access=ALL-UNNAMED -Xmx48g -cp "$here/lib/*" -Dgpuvectors.gpu.pass_graphs=false \
  org.junit.platform.console.ConsoleLauncher execute --disable-banner --details=summary --disable-ansi-colors \
  --select-class org.gpuvectors.cuda.GpuAssignmentGpuTest --select-class org.gpuvectors.cuda.RerankSelectGpuTest \
  --select-class org.gpuvectors.cuda.GpuIvfPqIndexGpuTest --select-class org.gpuvectors.cuda.KernelModuleGpuTest \
  --select-class org.gpuvectors.cuda.PqCodebookTest \
  --reports-dir "$OUT/junit" > "$OUT/tests.log" 2>&1
echo "rc $?"
grep -E 'tests (successful|failed|aborted|skipped)|MethodSource|=>|Exception|expected' "$OUT/tests.log" | head -40
rm -rf "$OUT/junit"
