#!/bin/bash
# session 18: ivf_pq batch 1 at lower nprobe (10M x 128 at 8 and 12; 2M x 768 at 8)
base=$OUT
run() { # name N DIMS nprobe cands
  mkdir -p "$base/$1"
  OUT="$base/$1" BENCH_PHASES=exact,build,search \
  BENCH_OPTS="-Dgv.scale.params=nprobe=$4 -Dgv.scale.candidates=$5 -Dgv.scale.single=1000" \
    timeout 280 bash .device/run-gpu.sh ivfpqscale "$2" "$3" > "$base/$1/run.log" 2>&1
  grep -E "list sizes|batch 1|exact: batch|candidates .* batch 10000|x exact|recall" "$base/$1/ivfpq-scale-$2-$3.log" | cut -c1-330 | head -30
}
run m10-p8 10000000 128 8 20,30,40,60
run m10-p12 10000000 128 12 20,30,40
run d768-p8 2000000 768 8 40,50,80,100
