#!/bin/bash
# session 20, call 4: where the Fashion-MNIST graph build's device steps go (GraphBuildStepsBenchmark), then the whole
# codec GPU suite as run-gpu.sh runs it
here=$(cd "$(dirname "$0")" && pwd)
[ -x /tmp/jre/bin/java ] || tar xJf "$here/jre.tar.xz" -C /tmp
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
/tmp/jre/bin/java -ea --enable-native-access=ALL-UNNAMED -Xmx48g -cp "$here/lib/*" --add-modules jdk.incubator.vector \
  org.gpuvectors.codec.gpu.GraphBuildStepsBenchmark /tmp/fmnist 7 2>&1 | grep -v WARNING | tee "$OUT/graph-build-steps.log"
bash "$here/run-gpu.sh" codec-tests 2>&1 | tail -15
