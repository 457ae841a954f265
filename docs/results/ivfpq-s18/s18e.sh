#!/bin/bash
# session 18: 2M x 768 nprobe 8, one query at a time: the re-rank's own selection on (JVM 1, builds) and off (JVM 2)
base=$OUT
common="-Dgv.scale.params=nprobe=8 -Dgv.scale.candidates=30,40,50,64 -Dgv.scale.single=500 -Dgv.scale.queries=2000 -Dgv.scale.index=/tmp/gv768"
mkdir -p $base/on $base/off
OUT=$base/on BENCH_PHASES=exact,build,search BENCH_OPTS="$common" timeout 150 bash .device/run-gpu.sh ivfpqscale 2000000 768 > /dev/null 2>&1
grep -E "batch 1" $base/on/ivfpq-scale-2000000-768.log | cut -c1-300
OUT=$base/off BENCH_PHASES=exact,search BENCH_OPTS="$common -Dgpuvectors.gpu.rerank_fused_select=false" timeout 60 bash .device/run-gpu.sh ivfpqscale 2000000 768 > /dev/null 2>&1
grep -E "batch 1" $base/off/ivfpq-scale-2000000-768.log | cut -c1-300
rm -f $base/*/gpu.txt
