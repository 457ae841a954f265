#!/usr/bin/env bash
# Runs the GPU machine's two commands here (CPU only: the node reports the GPU inactive and every gpu_vector search
# runs on the CPU), to test the payload and the benchmark with a small n before spending GPU time:
#   bench/es/run-local.sh --n 20000 --dims 128 --clients 1,4 --duration 3
# Builds .device-es/es1 + es2 first when missing (bench/es/make-es-payload.sh; ALLOW_NO_FATBIN=1 is set, since there is
# no nvcc run here), unpacks es1 and es3 into $GV_ES_DIR (default /tmp/gv-es-local, commands 1 and 1b), then runs es2/run-es.sh with
# a 1 GB heap (command 2). Results: $OUT (default /tmp/gvb-out).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd); cd "$root"
export GV_ES_DIR=${GV_ES_DIR:-/tmp/gv-es-local} OUT=${OUT:-/tmp/gvb-out} ES_HEAP=${ES_HEAP:--Xms1g -Xmx1g}
if [ ! -f .device-es/es2/es.tar.xz ] || [ ! -f .device-es/es1/plugin.tar ] || [ -n "${REBUILD:-}" ]; then
  ALLOW_NO_FATBIN=${ALLOW_NO_FATBIN:-1} bench/es/make-es-payload.sh
fi
cp bench/es/run-es.sh bench/es/bench_es.py .device-es/es2/   # the scripts as they are now
echo ">> command 1 (simulated): unpack .device-es/es1 into $GV_ES_DIR"
rm -rf "$GV_ES_DIR" && mkdir -p "$GV_ES_DIR"
tar xJf .device-es/es1/jdk.tar.xz -C "$GV_ES_DIR" && tar xf .device-es/es1/plugin.tar -C "$GV_ES_DIR"
if [ -f .device-es/es3/fashion-train.tar.xz ]; then tar xJf .device-es/es3/fashion-train.tar.xz -C "$GV_ES_DIR"; fi
echo ">> command 2 (simulated): bash .device-es/es2/run-es.sh $*"
rm -rf "$OUT"; mkdir -p "$OUT"
bash .device-es/es2/run-es.sh "$@"
