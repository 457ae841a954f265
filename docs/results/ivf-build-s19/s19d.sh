#!/bin/bash
# session 19: the cuda GPU suite but KSelectGpuTest (unchanged since its last GPU run, and most of the suite's time)
here=$(cd "$(dirname "$0")" && pwd)
[ -x /tmp/jre/bin/java ] || tar xJf "$here/jre.tar.xz" -C /tmp
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export GV_REQUIRE_GPU=1
/tmp/jre/bin/java -ea --enable-native-access=ALL-UNNAMED -Xmx48g -cp "$here/lib/*" -Dgpuvectors.gpu.pass_graphs=false \
  org.junit.platform.console.ConsoleLauncher execute --disable-banner --details=summary --disable-ansi-colors \
  --select-class org.gpuvectors.cuda.CpuOnlyTest --select-class org.gpuvectors.cuda.CpuOracleTest --select-class org.gpuvectors.cuda.GpuFlatIndexGpuTest --select-class org.gpuvectors.cuda.GpuFlatIndexTf32GpuTest --select-class org.gpuvectors.cuda.Tf32BoundTest --select-class org.gpuvectors.cuda.GpuIvfFlatIndexGpuTest --select-class org.gpuvectors.cuda.GpuIvfPqIndexGpuTest --select-class org.gpuvectors.cuda.PqCodebookTest --select-class org.gpuvectors.cuda.GpuGraphIndexGpuTest --select-class org.gpuvectors.cuda.GraphReferenceTest --select-class org.gpuvectors.cuda.QueryRowsGpuTest --select-class org.gpuvectors.cuda.SearchGroupTest --select-class org.gpuvectors.cuda.GraphFilterPlanTest --select-class org.gpuvectors.cuda.LanesGpuTest --select-class org.gpuvectors.cuda.KernelModuleGpuTest --select-class org.gpuvectors.cuda.PassSlotsGpuTest --select-class org.gpuvectors.cuda.FlatScanParamsTest --select-class org.gpuvectors.cuda.QueryBlocksTest --select-class org.gpuvectors.cuda.PqCodeLayoutTest --select-class org.gpuvectors.cuda.RerankSelectGpuTest --select-class org.gpuvectors.cuda.GpuAssignmentGpuTest  --reports-dir "$OUT/junit" > "$OUT/tests.log" 2>&1
echo "rc $?"
grep -E 'tests (successful|failed|aborted|skipped)|MethodSource|=>' "$OUT/tests.log" | head -40
rm -rf "$OUT/junit"
