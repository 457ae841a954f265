#!/bin/bash
# session 18: 2M x 768 ivf_pq at nprobe 4 and 8 (batch 1 as the median of 5 runs)
base=$OUT
for p in 4 8; do
  mkdir -p "$base/d768-p$p"
  OUT="$base/d768-p$p" BENCH_PHASES=exact,build,search \
  BENCH_OPTS="-Dgv.scale.params=nprobe=$p -Dgv.scale.candidates=40,50,80,100 -Dgv.scale.single=1000" \
    timeout 200 bash .device/run-gpu.sh ivfpqscale 2000000 768 > /dev/null 2>&1
  grep -E "list sizes|batch 1|exact: batch|fastest" "$base/d768-p$p/ivfpq-scale-2000000-768.log" | cut -c1-300
  rm -f $base/d768-p$p/gpu.txt
done
