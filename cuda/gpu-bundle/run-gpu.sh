#!/usr/bin/env bash
# Runs on the GPU machine (no JDK/Maven there), from the repository root:
#   bash .device/run-gpu.sh [tests|cuda-tests|codec-tests|flat-tests|select|exact|small|passes|tf32|ivfpq|graph|torch|codec|fmnist|build|graphmerge|knngraph|hostpath|concurrent|ivfpqscale|capacity|all] [select-max-floats] [exact-n] [dims segments seconds]
#   bash .device/run-gpu.sh ivfpqscale N DIMS
#   bash .device/run-gpu.sh capacity N DIMS
# tests: the cuda and codec test suites on the GPU (any skipped test fails the run); 575 s on the H100 (session 17),
# near the device tool's 600 s a command: cuda-tests and codec-tests run one suite each, for two commands.
# small: ExactSearchBench small: the flat scan against the GEMM path at batches 1-128 (exact-n x 128 and x 768,
# k = 10 / 100), then torch_exact.py (FP32 and TF32) at the same batches.
# passes: ExactSearchBench passes: the FP16 path's device time, scan kernel and captured pass (wall, enqueue) at 1-16
# queries, k = 10 / 100, exact-n x 128 and x 768; then torch_exact.py there.
# tf32: ExactSearchBench tf32: GpuFlatIndex FP32 vs TF32 candidates + FP32 re-rank, batch 10k, k = 1/10/100, on
# Fashion-MNIST from $FMNIST_DIR (default /tmp/fmnist) when staged there, else 60k x 784 synthetic images; then
# torch_fmnist.py (FP32 and TF32 matmul + topk) on the same data when it is there.
# ivfpq: IvfPqBench: GPU IVF-PQ (nlist 245, pq_m 98) precomputed-table vs full-table scan, batch 10k and 1,
# nprobe 4/8/16, k = 40, on Fashion-MNIST from $FMNIST_DIR (default /tmp/fmnist) or synthetic images.
# graph: GraphSearchBench: GpuGraphIndex recall@10 and q/s at batch 10k and 1, widths 16..256, and a sweep of
# parents and threads at batch 1, on Fashion-MNIST from $FMNIST_DIR (else 60k x 784 synthetic images), then exact-n
# x 128 clustered (exact-n 0: skipped); graph built with the GPU's exact k-NN; BENCH_OPTS passes e.g.
# -Dgv.bench.graph.sections=latency.
# codec: FlatSearchBenchmark (GPU path vs CPU path through
# the codec) and torch_flat.py on the same data, for exact-n x 128 and exact-n x 768.
# fmnist: Fashion-MNIST (ann-benchmarks' fashion-mnist-784-euclidean), GPU exact vs CPU exact vs
# Lucene HNSW; needs Debian's dataset-fashion-mnist .gz files in $FMNIST_DIR (default /tmp/fmnist,
# staged by an earlier call: they do not fit in one transfer with the bundle).
# build (or ivfbuild): IndexBuildBenchmark: flat, ivf_flat, ivf_pq and graph builds of Fashion-MNIST ($FMNIST_DIR, staged
# as for fmnist; BENCH_ARGS "reps hnswReps types cpu", default 5 3 flat,ivf_flat,ivf_pq,graph true: each type reps times
# on the GPU and once on the CPU) against Lucene HNSW built on all cores
# in the same JVM: median build, median writer time (train + encode + write) with its phases, recall@10, bytes a vector
# (the index structure and the raw vectors on disk, GPU memory). BENCH_OPTS passes JVM options to the benchmark.
# graphmerge: GraphMergeBenchmark: Fashion-MNIST ($FMNIST_DIR) in segments of a graph field, force-merged by a rebuild
# (its k-NN step on the GPU), from the segments' graphs (the merge that runs where there is no GPU, here on the CPU's
# cores) and by Lucene HNSW from the same documents' segments: times and recall@10.
# knngraph: KnnGraphBenchmark: the whole-index k-NN graph (k = 10) with its recall on 1,000 sampled rows, a graph
# field's build, and their k-NN steps on the GPU (default path, plus IVF forced or exact brute force for comparison),
# for Fashion-MNIST from $FMNIST_DIR (skipped when absent; with Lucene HNSW's build on all cores) and exact-n x 128
# clustered synthetic (exact brute force of more than 200k vectors: timed on a quarter, x 16). BENCH_PHASES picks
# phases (default fmnist,synthetic,hnsw; add full-exact to time the whole exact step).
# ivfpqscale N DIMS: IvfPqScaleBenchmark: one ivf_pq segment of N x DIMS clustered vectors built on the GPU
# (indexing + one force-merge, the writer's build phases, file sizes), searched through KnnBatchSearcher at batch
# 10k and 1 over a num_candidates sweep against exact GPU search (GpuFlatIndex) in the same run, GPU bytes per
# vector, and the CPU build of a subset. BENCH_PHASES picks phases (default exact,build,search,cpubuild);
# BENCH_OPTS passes e.g. -Dgv.scale.params=nlist=4096,nprobe=16 -Dgv.scale.candidates=10,40,100 -Dgv.scale.cpuBuildN=500000;
# BENCH_XMX the heap (default 90g: 10M x 128 needs about 20 GB; N x 768 about 3 x N x 3 KB). TORCH_PEER=1 runs
# PyTorch's exact search (bench/torch_scale.py, FP32 and TF32, batch 10k and one query at a time) on the same data
# right after ours.
# capacity N DIMS: ByteCapacityBenchmark: one Lucene index of N x DIMS byte vectors (embedding-like, scaled to bytes),
# built on the GPU (indexing + one force-merge into one ivf_pq segment) and kept in /tmp/gv-capacity, resident as its
# codes only, searched at batch 10k and 1 over a num_candidates sweep against exact GPU search in the same run; GPU
# and host bytes a vector. 100M x 128 takes about 6 minutes to build and 72 GB of heap (BENCH_XMX); BENCH_OPTS passes
# e.g. -Dgv.cap.params=pq_m=16,nprobe=32 -Dgv.cap.batch=1000 -Dgv.cap.candidates=100,200,400, BENCH_PHASES the phases
# (default exact,build,search; exact,search searches the kept index). Each row's coarse_recall_at_10: the share of the
# true neighbours whose list the row probes; capacity-N-DIMS-coarse.csv the same at -Dgv.cap.coverage.nprobes lists
# (host only). Another nlist is another build: -Dgv.cap.params=nlist=65536,pq_m=16,nprobe=128 -Dgv.cap.dir=/tmp/gv-cap-65536
# (give nprobe: nlist / 16 passes the device's 2,048 lists). Plot: lucene-codec/bench/plot_capacity.py.
# Unpacks the JRE into /tmp, runs the GPU tests (JUnit console, reports under $OUT/junit) and the
# benchmarks (tables on stdout, CSVs and logs under $OUT). Test classes are selected by name: the
# jlinked JRE has no jdk.zipfs, which JUnit's package scan of jars would need.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/gv-out}; export OUT; mkdir -p "$OUT"
mode=${1:-all}; sel_max=${2:-100000000}; exact_n=${3:-1000000}
# the JRE (xz; Python's lzma where the machine has no xz for tar)
[ -x /tmp/jre/bin/java ] || tar xJf "$here/jre.tar.xz" -C /tmp 2>/dev/null \
  || python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$here/jre.tar.xz" /tmp
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee "$OUT/gpu.txt"
# This is the GPU machine: a missing or broken GPU fails the GPU tests instead of skipping them.
export GV_REQUIRE_GPU=${GV_REQUIRE_GPU:-1}
java=(/tmp/jre/bin/java -ea --enable-native-access=ALL-UNNAMED -Xmx48g -cp "$here/lib/*")
# A JUnit console summary with skipped or aborted tests fails the run: on the GPU machine every GPU test must run.
check_summary() {
  local log=$1
  if grep -Eq '([1-9][0-9]*) tests (failed|aborted|skipped)' "$log"; then
    echo "FAILED: $log reports failed, aborted or skipped tests:"; grep -E 'tests (failed|aborted|skipped)' "$log"; rc=1
  fi
}
rc=0
if [ "$mode" = tests ] || [ "$mode" = cuda-tests ] || [ "$mode" = all ]; then
  # the production defaults, capture of passes as CUDA graphs included; tests that need another configuration
  # open a device of their own with it
  "${java[@]}" org.junit.platform.console.ConsoleLauncher execute --disable-banner \
    --details=summary --disable-ansi-colors --select-class org.gpuvectors.cuda.select.CpuOnlyTest --select-class org.gpuvectors.cuda.CpuOracleTest \
    --select-class org.gpuvectors.cuda.select.KSelectGpuTest --select-class org.gpuvectors.cuda.flat.GpuFlatIndexGpuTest \
    --select-class org.gpuvectors.cuda.flat.GpuFlatIndexTf32GpuTest --select-class org.gpuvectors.cuda.rerank.CandidateBoundTest \
    --select-class org.gpuvectors.cuda.flat.GpuFlatIndexHalfGpuTest --select-class org.gpuvectors.cuda.flat.GpuElementFlatIndexGpuTest --select-class org.gpuvectors.cuda.flat.ElementScanMathTest --select-class org.gpuvectors.cuda.flat.HalfScanParamsTest \
    --select-class org.gpuvectors.cuda.ivf.GpuIvfFlatIndexGpuTest --select-class org.gpuvectors.cuda.ivf.GpuIvfPqIndexGpuTest \
    --select-class org.gpuvectors.cuda.ivf.PqCodebookTest --select-class org.gpuvectors.cuda.graph.GpuGraphIndexGpuTest \
    --select-class org.gpuvectors.cuda.GraphReferenceTest --select-class org.gpuvectors.cuda.ivf.QueryRowsGpuTest \
    --select-class org.gpuvectors.cuda.pass.SearchGroupTest --select-class org.gpuvectors.cuda.graph.GraphWalkUnderFilterTest \
    --select-class org.gpuvectors.cuda.device.LanesGpuTest --select-class org.gpuvectors.cuda.KernelModuleGpuTest \
    --select-class org.gpuvectors.cuda.device.PassSlotsGpuTest --select-class org.gpuvectors.cuda.device.HeldBlocksGpuTest --select-class org.gpuvectors.cuda.flat.FlatScanParamsTest --select-class org.gpuvectors.cuda.ivf.QueryBlocksTest \
    --select-class org.gpuvectors.cuda.FlatConfigTest --select-class org.gpuvectors.cuda.runtime.DeviceMemoryPoolTest \
    --select-class org.gpuvectors.cuda.ivf.PqCodeLayoutTest --select-class org.gpuvectors.cuda.ivf.RerankSelectGpuTest \
    --select-class org.gpuvectors.cuda.GpuAssignmentGpuTest \
    --select-class org.gpuvectors.cuda.pass.BatchSearchLayoutTest --select-class org.gpuvectors.cuda.pass.PassGraphsGpuTest \
    --reports-dir "$OUT/junit" > "$OUT/tests.log" 2>&1 || rc=1
  grep -E '^\[gpu-vectors\]|tests (successful|failed|aborted|skipped)|MethodSource|=>|Exception|expected' "$OUT/tests.log" | head -60
  check_summary "$OUT/tests.log"
fi
if [ "$mode" = flat-tests ]; then
  # the flat index's GPU tests alone (exact search: FP32 scan, FP16 candidates, TF32 candidates, captured passes)
  "${java[@]}" org.junit.platform.console.ConsoleLauncher execute --disable-banner \
    --details=summary --disable-ansi-colors --select-class org.gpuvectors.cuda.flat.GpuFlatIndexHalfGpuTest --select-class org.gpuvectors.cuda.flat.GpuElementFlatIndexGpuTest --select-class org.gpuvectors.cuda.flat.ElementScanMathTest \
    --select-class org.gpuvectors.cuda.flat.GpuFlatIndexGpuTest --select-class org.gpuvectors.cuda.flat.GpuFlatIndexTf32GpuTest \
    --select-class org.gpuvectors.cuda.pass.PassGraphsGpuTest --select-class org.gpuvectors.cuda.KernelModuleGpuTest \
    --select-class org.gpuvectors.cuda.rerank.CandidateBoundTest --select-class org.gpuvectors.cuda.flat.HalfScanParamsTest \
    --select-class org.gpuvectors.cuda.ivf.RerankSelectGpuTest \
    --reports-dir "$OUT/junit-flat" > "$OUT/flat-tests.log" 2>&1 || rc=1
  grep -E '^\[gpu-vectors\]|tests (successful|failed|aborted|skipped)|MethodSource|=>|Exception|expected' "$OUT/flat-tests.log" | head -60
  check_summary "$OUT/flat-tests.log"
fi
if [ "$mode" = tests ] || [ "$mode" = codec-tests ] || [ "$mode" = all ]; then
  # the codec on the GPU: Lucene's BaseKnnVectorsFormatTestCase, the format tests, the GPU-vs-oracle path, the service
  "${java[@]}" --add-modules jdk.incubator.vector org.junit.platform.console.ConsoleLauncher execute --disable-banner \
    --details=summary --disable-ansi-colors --select-class org.gpuvectors.codec.GpuSearchPathTests \
    --select-class org.gpuvectors.codec.gpu.GpuSearchServiceTests --select-class org.gpuvectors.codec.GpuVectorsFormatTests \
    --select-class org.gpuvectors.codec.TestGpuVectorsFormat --select-class org.gpuvectors.codec.TestGpuIvfFlatFormat \
    --select-class org.gpuvectors.codec.IvfFlatTests --select-class org.gpuvectors.codec.ivf.KMeansTests \
    --select-class org.gpuvectors.codec.TestGpuIvfPqFormat --select-class org.gpuvectors.codec.IvfPqTests \
    --select-class org.gpuvectors.codec.TestGpuGraphFormat --select-class org.gpuvectors.codec.GraphTests \
    --select-class org.gpuvectors.codec.graph.GraphBuildTests --select-class org.gpuvectors.codec.gpu.GpuKnnGraphTests \
    --select-class org.gpuvectors.codec.KnnBatchSearcherTests --select-class org.gpuvectors.codec.SegmentHitsTests \
    --select-class org.gpuvectors.codec.OrdinalOrderRerankTests --select-class org.gpuvectors.codec.ElementSearchTests \
    --select-class org.gpuvectors.codec.ElementTypesOnGpuTests --select-class org.gpuvectors.codec.ElementTypeIndexTests \
    --select-class org.gpuvectors.codec.gpu.IvfKnnGraphTests --select-class org.gpuvectors.codec.KnnGraphOfIndexTests \
    --select-class org.gpuvectors.codec.graph.BeamSearchTests \
    --select-class org.gpuvectors.codec.graph.SmallClustersEntryPointsTests --select-class org.gpuvectors.codec.graph.GpuEntryPointsTests \
    --select-class org.gpuvectors.codec.ResidentFormsOnGpuTests --select-class org.gpuvectors.codec.CompactCopyTests \
    --select-class org.gpuvectors.codec.ResidencyBudgetSweepTests --select-class org.gpuvectors.codec.DefaultRecallTests \
    --reports-dir "$OUT/junit-codec" > "$OUT/codec-tests.log" 2>&1 || rc=1
  grep -E '^\[gpu-vectors\]|tests (successful|failed|aborted|skipped)|MethodSource|=>|Exception|expected' "$OUT/codec-tests.log" | head -60
  check_summary "$OUT/codec-tests.log"
fi
if [ "$mode" = select ] || [ "$mode" = all ]; then
  "${java[@]}" org.gpuvectors.cuda.select.SelectBench "$sel_max" 2>&1 | tee "$OUT/select_bench.log" || rc=1
fi
if [ "$mode" = exact ] || [ "$mode" = all ]; then
  "${java[@]}" org.gpuvectors.cuda.flat.ExactSearchBench "$exact_n" 2>&1 | tee "$OUT/exact_bench.log" || rc=1
fi
if [ "$mode" = tf32 ]; then
  "${java[@]}" org.gpuvectors.cuda.flat.ExactSearchBench tf32 "${FMNIST_DIR:-/tmp/fmnist}" 2>&1 | tee "$OUT/exact_tf32.log" || rc=1
  if [ -f "${FMNIST_DIR:-/tmp/fmnist}/train-images-idx3-ubyte.gz" ]; then # the PyTorch peer, right after ours
    PYTHONUNBUFFERED=1 python3 "$here/bench/torch_fmnist.py" "${FMNIST_DIR:-/tmp/fmnist}" "$OUT" 2>&1 | tee "$OUT/torch-fmnist.log"
  fi
fi
if [ "$mode" = ivfpq ]; then
  "${java[@]}" org.gpuvectors.cuda.ivf.IvfPqBench "${FMNIST_DIR:-/tmp/fmnist}" 2>&1 | tee "$OUT/ivfpq.log" || rc=1
fi
if [ "$mode" = graph ]; then
  "${java[@]}" ${BENCH_OPTS:-} org.gpuvectors.cuda.graph.GraphSearchBench "${FMNIST_DIR:-/tmp/fmnist}" "$exact_n" 2>&1 \
    | tee "$OUT/graph_bench.log" || rc=1
fi
if [ "$mode" = small ]; then
  "${java[@]}" org.gpuvectors.cuda.flat.ExactSearchBench small "$exact_n" 2>&1 | tee "$OUT/exact_small.log" || rc=1
  OUT="$OUT" TORCH_BATCHES=1,2,4,8,16,32,64,128 TORCH_PRECISIONS=fp32,tf32 PYTHONUNBUFFERED=1 \
    python3 "$here/bench/torch_exact.py" "$exact_n" 2>&1 | tee "$OUT/torch_exact_small.log"
fi
if [ "$mode" = passes ]; then
  # the FP16 path's passes at 1-16 queries, chunks keeping k' candidates or fewer, then PyTorch at the same batches
  "${java[@]}" org.gpuvectors.cuda.flat.ExactSearchBench passes "$exact_n" 2>&1 | tee "$OUT/half_passes.log" || rc=1
  OUT="$OUT" TORCH_BATCHES=1,2,4,8,16 TORCH_PRECISIONS=fp32,tf32 PYTHONUNBUFFERED=1 \
    python3 "$here/bench/torch_exact.py" "$exact_n" 2>&1 | tee "$OUT/torch_exact_passes.log"
fi
if [ "$mode" = torch ] || [ "$mode" = all ]; then
  PYTHONUNBUFFERED=1 python3 "$here/bench/torch_topk.py" "$sel_max" 2>&1 | tee "$OUT/torch_topk.log"
  PYTHONUNBUFFERED=1 python3 "$here/bench/torch_exact.py" "$exact_n" 2>&1 | tee "$OUT/torch_exact.log"
fi
if [ "$mode" = codec ] || [ "$mode" = all ]; then
  for dims in 128 768; do
    "${java[@]}" --add-modules jdk.incubator.vector org.gpuvectors.codec.FlatSearchBenchmark "$exact_n" "$dims" "$OUT" 16 2>&1 \
      | grep --line-buffered -v '^WARNING' | tee "$OUT/flat-bench-$dims.log" || rc=1
    PYTHONUNBUFFERED=1 python3 "$here/bench/torch_flat.py" "$exact_n" "$dims" "$OUT" 2>&1 | tee "$OUT/torch-flat-$dims.log"
    rm -f /tmp/gv-bench-"$exact_n"-"$dims".*.f32
  done
fi
if [ "$mode" = concurrent ]; then
  # concurrent single-query searches through Lucene: natural segments vs force-merged (args: n dims segments seconds)
  "${java[@]}" ${BENCH_OPTS:-} --add-modules jdk.incubator.vector org.gpuvectors.codec.ConcurrentSearchBenchmark "$exact_n" "${4:-128}" \
    "${5:-12}" "$OUT" "${6:-3}" "${7:-10}" 2>&1 | grep --line-buffered -v '^WARNING' | tee "$OUT/concurrent-$exact_n-${4:-128}.log" || rc=1
fi
if [ "$mode" = knngraph ]; then
  "${java[@]}" ${BENCH_OPTS:-} --add-modules jdk.incubator.vector org.gpuvectors.codec.KnnGraphBenchmark "${FMNIST_DIR:-/tmp/fmnist}" \
    "$OUT" "$exact_n" "${BENCH_PHASES:-fmnist,synthetic,hnsw}" 2>&1 | grep --line-buffered -v '^WARNING' | tee "$OUT/knn-graph.log" || rc=1
fi
if [ "$mode" = build ] || [ "$mode" = ivfbuild ]; then
  # issues 8 and 9's build targets: builds on Fashion-MNIST against Lucene HNSW on all cores, same JVM
  "${java[@]}" ${BENCH_OPTS:-} --add-modules jdk.incubator.vector org.gpuvectors.codec.IndexBuildBenchmark "${FMNIST_DIR:-/tmp/fmnist}" \
    "$OUT" ${BENCH_ARGS:-} 2>&1 | grep --line-buffered -v '^WARNING' | tee "$OUT/index-build.log" || rc=1
fi
if [ "$mode" = graphmerge ]; then
  # issue 9's merge: a graph field's segments force-merged by a rebuild (on the GPU here), from their graphs (on the CPU's
  # cores) and by Lucene HNSW (same documents, all cores); BENCH_ARGS "vectors segments reps deleted hnsw"
  "${java[@]}" ${BENCH_OPTS:-} --add-modules jdk.incubator.vector org.gpuvectors.codec.GraphMergeBenchmark \
    "${FMNIST_DIR:-/tmp/fmnist}" "$OUT" ${BENCH_ARGS:-60000 4 3 0} 2>&1 | grep --line-buffered -v '^WARNING' \
    | tee "$OUT/graph-merge.log" || rc=1
fi
if [ "$mode" = fmnist ]; then
  "${java[@]}" --add-modules jdk.incubator.vector org.gpuvectors.codec.FashionMnistBenchmark "${FMNIST_DIR:-/tmp/fmnist}" "$OUT" 2>&1 \
    | grep --line-buffered -v '^WARNING' | tee "$OUT/fashion-mnist.log" || rc=1
  # the exact-search peer on the same data, timed the same way (wall clock, transfers included)
  PYTHONUNBUFFERED=1 python3 "$here/bench/torch_fmnist.py" "${FMNIST_DIR:-/tmp/fmnist}" "$OUT" 2>&1 | tee "$OUT/torch-fmnist.log"
fi
if [ "$mode" = ivfpqscale ]; then
  # args: N DIMS (in the select-max-floats and exact-n slots); the index goes under /tmp and is deleted at the end
  scale_java=("${java[@]/-Xmx48g/-Xmx${BENCH_XMX:-90g}}")
  # TORCH_PEER=1: the data also goes to /tmp as raw float32 and PyTorch's exact search runs on it right after ours
  peer=(); [ "${TORCH_PEER:-0}" = 1 ] && peer=(-Dgv.scale.dumpData=true)
  "${scale_java[@]}" ${BENCH_OPTS:-} "${peer[@]}" -Dgv.scale.phases="${BENCH_PHASES:-exact,build,search,cpubuild}" \
    --add-modules jdk.incubator.vector org.gpuvectors.codec.IvfPqScaleBenchmark "${2:-10000000}" "${3:-128}" "$OUT" 2>&1 \
    | grep --line-buffered -v '^WARNING' | tee "$OUT/ivfpq-scale-${2:-10000000}-${3:-128}.log" || rc=1
  rm -rf /tmp/gv-ivfpq-scale*
  if [ "${TORCH_PEER:-0}" = 1 ]; then
    PYTHONUNBUFFERED=1 python3 "$here/bench/torch_scale.py" "${2:-10000000}" "${3:-128}" "$OUT" 2>&1 \
      | tee "$OUT/torch-scale-${2:-10000000}-${3:-128}.log"
    rm -f /tmp/gv-bench-"${2:-10000000}"-"${3:-128}".*.f32
  fi
fi
if [ "$mode" = capacity ]; then
  cap_java=("${java[@]/-Xmx48g/-Xmx${BENCH_XMX:-72g}}")
  "${cap_java[@]}" ${BENCH_OPTS:-} -Dgv.cap.phases="${BENCH_PHASES:-exact,build,search}" \
    --add-modules jdk.incubator.vector org.gpuvectors.codec.ByteCapacityBenchmark "${2:-100000000}" "${3:-128}" "$OUT" 2>&1 \
    | grep --line-buffered -v '^WARNING' | tee "$OUT/capacity-${2:-100000000}-${3:-128}.log" || rc=1
fi
# hostpath: HostPathBenchmark, the host side of a 10k-query batch through KnnBatchSearcher (flat, ivf_flat,
# ivf_pq at nprobe 8) with a backend that answers at once: what the machine's cores spend around a pass
if [ "$mode" = hostpath ]; then
  "${java[@]}" --add-modules jdk.incubator.vector org.gpuvectors.codec.HostPathBenchmark \
    "${FMNIST_DIR:-/tmp/fmnist}" 2>&1 | grep --line-buffered -v '^WARNING' | tee "$OUT/hostpath.log" || rc=1
  rm -rf /tmp/gv-hostpath-*
fi
exit $rc
