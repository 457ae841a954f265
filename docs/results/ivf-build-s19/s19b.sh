#!/bin/bash
# session 19: where an IVF build's time goes (AssignmentBenchmark on Fashion-MNIST), then KernelModuleGpuTest
here=$(cd "$(dirname "$0")" && pwd)
[ -x /tmp/jre/bin/java ] || tar xJf "$here/jre.tar.xz" -C /tmp
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export GV_REQUIRE_GPU=1
/tmp/jre/bin/java -ea --enable-native-access=ALL-UNNAMED -Xmx48g -cp "$here/lib/*" --add-modules jdk.incubator.vector \
  org.gpuvectors.codec.ivf.AssignmentBenchmark /tmp/fmnist ${REPS:-5} 2>&1 | grep -v -E '^(WARNING|Nov|INFO)' | tee $OUT/assignment.log
/tmp/jre/bin/java -ea --enable-native-access=ALL-UNNAMED -Xmx48g -cp "$here/lib/*" \
  org.junit.platform.console.ConsoleLauncher execute --disable-banner --details=summary --disable-ansi-colors \
  --select-class org.gpuvectors.cuda.KernelModuleGpuTest > "$OUT/tests.log" 2>&1
echo "rc $?"; grep -E 'tests (successful|failed)|=>' "$OUT/tests.log" | head
