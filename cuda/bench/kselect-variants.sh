#!/usr/bin/env bash
# Kernel experiments on the GPU machine (it has nvcc but no Java build): compiles variants of the
# kernels there (all .cu files of a source directory, one translation unit) and runs a benchmark once
# per variant, in one call, so the variants are compared on the same machine and data. The benchmark
# is `SelectBench <maxFloats> levels` (first pass vs whole selection, WarpSelect and BlockSelect), or
# the class and arguments in $BENCH (e.g. BENCH="org.gpuvectors.cuda.flat.ExactSearchBench 1000000").
# Run from the repository root after cuda/gpu-bundle/make-bundle.sh:
#   bash cuda/bench/kselect-variants.sh [maxFloats] VARIANT...
# VARIANT = name|sourceDir|nvccDefines|javaProps, e.g.
#   "stages2|cuda/src/main/cuda|-DGV_SCAN_STAGES=2|"   "props|||-Dname=value"
# An empty sourceDir means the built-in fatbin (no compile). Output: $OUT/variants-<name>.log.
set -uo pipefail
root=$(pwd)
OUT=${OUT:-/tmp/gv-out}; mkdir -p "$OUT"
max=${1:-100000000}; shift
[ -x /tmp/jre/bin/java ] || tar xJf "$root/.device/jre.tar.xz" -C /tmp
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
work=/tmp/gv-variants; mkdir -p "$work"
for v in "$@"; do  # compile all variants in parallel (one sm_90 translation unit each)
  IFS='|' read -r name src defs props <<<"$v"
  if [ -n "$src" ]; then
    src=$(cd "$src" && pwd)
    for f in "$src"/*.cu; do echo "#include \"$f\""; done > "$work/$name.cu"
    # shellcheck disable=SC2086
    "$nvcc" -std=c++17 -O3 -lineinfo -gencode=arch=compute_90,code=sm_90 $defs -I"$src" -fatbin \
      -o "$work/$name.fatbin" "$work/$name.cu" > "$work/$name.nvcc.log" 2>&1 &
  fi
done
wait
for v in "$@"; do
  IFS='|' read -r name src defs props <<<"$v"
  fat=()
  if [ -n "$src" ]; then
    [ -s "$work/$name.fatbin" ] || { echo "== $name: nvcc failed"; cat "$work/$name.nvcc.log"; continue; }
    fat=(-Dgv.cuda.fatbin="$work/$name.fatbin")
  fi
  echo "== $name ($src $defs $props)"
  # shellcheck disable=SC2086
  /tmp/jre/bin/java --enable-native-access=ALL-UNNAMED -Xmx16g "${fat[@]}" $props -cp "$root/.device/lib/*" \
    ${BENCH:-org.gpuvectors.cuda.select.SelectBench "$max" levels} 2>&1 | tee "$OUT/variants-$name.log"
done
