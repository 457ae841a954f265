#!/usr/bin/env bash
# Compiles each src/main/cuda/*.cu as its own translation unit into its own fatbin, units in parallel:
# SASS for sm_80, sm_86, sm_89 and sm_90, and compute_90 PTX for newer GPUs.
# Usage: build-fatbin.sh SRC_DIR OUT_DIR WORK_DIR
# Output in OUT_DIR (the classpath folder org/gpuvectors/cuda/kernels/, loaded by KernelModule):
#   <unit>.fatbin  one per SRC_DIR/<unit>.cu: the unit's kernels, each a stable extern "C" name
#   index          the unit fatbins, one file name a line: what the runtime loads
#   index.missing  instead of the two above when nvcc is absent: the reason, which GpuAvailability reports
# - Incremental: a unit is recompiled only when its stamp (nvcc version, flags, archs, its .cu and every
#   .cuh header) changed; stamps, nvcc logs and kernel lists are in WORK_DIR. Fatbins of deleted .cu
#   files are removed.
# - Parallel: each nvcc runs --threads NVCC_THREADS (default: the SASS targets, at most the cores) of its
#   arch targets side by side, NVCC_JOBS units at once (default: cores / threads, at least 1); units whose
#   last compile took longest start first so that no long unit is left running alone at the end.
# - Fails when two units define a kernel of the same name (the runtime looks kernels up by name across
#   units): the names are the entry functions ptxas reports compiling (--resource-usage), so they are
#   what the fatbins really export, macros and templates included.
# - Without nvcc, succeeds and writes OUT_DIR/index.missing with the reason.
# Times on the 2-core build machine (nvcc 13.0), cold and incremental, against the former single unity
# fatbin: cuda/README.md, "Build" (cold default archs ~180 s either way, sm90 24 s against 45 s).
# Env: NVCC (path to nvcc; 'none' = act as if absent), NVCC_JOBS, NVCC_THREADS, GV_CUDA_ARCHS (override).
set -euo pipefail
shopt -s nullglob  # a glob that matches nothing is no word, not itself
src=${1:?src dir}; out=${2:?out dir}; work=${3:?work dir}
mkdir -p "$out" "$work"
# the single gpu-vectors.fatbin of builds before the split: a stale copy in an unclean target/classes
# would be packaged next to the units
rm -f "$(dirname "$out")/gpu-vectors.fatbin" "$(dirname "$out")/gpu-vectors.fatbin.missing"
nvcc=${NVCC:-$(command -v nvcc || true)}
if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc; fi
if [ "$nvcc" = none ]; then nvcc=""; fi   # NVCC=none: behave as on a machine without nvcc
if [ -z "$nvcc" ]; then
  rm -f "$out"/*.fatbin "$out/index" "$work"/*.stamp
  echo "GPU kernels were not built (nvcc was not found at build time)" > "$out/index.missing"
  echo "[gpu-vectors] WARNING: nvcc not found: GPU kernels were not built" >&2
  exit 0
fi
# Default (lean): SASS for sm_80 (A100; it also runs on sm_86 / sm_89 GPUs, the A10, L4, L40: same major
# version) and sm_90 (H100 / H200), plus compute_90 PTX that newer GPUs JIT. The sm_86 / sm_89 passes were
# the slowest of a cold build and 2/5 of the plugin's kernels (27 MB in all): GV_CUDA_ARCHS=all adds them.
# For faster development builds: GV_CUDA_ARCHS=sm90 (the H100 / H200 alone).
all_archs="-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_86,code=sm_86 -gencode=arch=compute_89,code=sm_89 -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90"
case "${GV_CUDA_ARCHS:-lean}" in
  all) archs=$all_archs ;;
  lean) archs="-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90" ;;
  sm90) archs="-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90" ;;
  *) archs=$GV_CUDA_ARCHS ;;
esac
# -compress-all: nvcc compresses the SASS of a large fatbin on its own (the former single fatbin for sm90:
# 9 MB of 26 MB) but not of a unit's (select_kernels for sm90: 8 MB uncompressed, 2 MB compressed); the
# driver inflates it at load
flags="-std=c++17 -O3 -lineinfo -Xfatbin=-compress-all"
units=()
for f in "$src"/*.cu; do units+=("$(basename "$f" .cu)"); done
[ ${#units[@]} -gt 0 ] || { echo "[gpu-vectors] no .cu files in $src" >&2; exit 1; }

# what every unit's stamp shares: compiler, flags and all headers (a unit may include any of them)
common=$( { "$nvcc" --version; echo "$archs $flags"; for h in "$src"/*.cuh; do basename "$h"; cat "$h"; done; } \
  | sha256sum | cut -d' ' -f1)
stale=()
for u in "${units[@]}"; do
  stamp=$( { echo "$common $u"; cat "$src/$u.cu"; } | sha256sum | cut -d' ' -f1)
  if [ -f "$out/$u.fatbin" ] && [ -f "$work/$u.kernels" ] && [ "$(cat "$work/$u.stamp" 2>/dev/null)" = "$stamp" ]; then
    continue
  fi
  rm -f "$work/$u.stamp"
  echo "$stamp" > "$work/$u.stamp.next"
  stale+=("$u")
done
# units whose .cu is gone
for f in "$out"/*.fatbin; do
  u=$(basename "$f" .fatbin)
  if [ ! -f "$src/$u.cu" ]; then
    rm -f "$f" "$work/$u".{stamp,stamp.next,kernels,log,seconds}
    echo "[gpu-vectors] removed $u.fatbin (no $u.cu)"
  fi
done
rm -f "$out/index.missing"

cores=$(nproc 2>/dev/null || echo 2)
start=$(date +%s)
if [ ${#stale[@]} -gt 0 ]; then
  # nvcc --threads runs a unit's arch targets side by side; the SASS ones are the work (the PTX target is a
  # by-product of sm_90's). Cores go to targets within a unit first, then to units (2 cores, all archs, cold:
  # 1 unit at a time with --threads 2 and 2 at once with --threads 1 took the same wall time within the
  # machine's noise, the first less CPU time; cuda/README.md, "Build"); sm90 alone: 2 units at once.
  sass=$(grep -o 'code=sm_' <<<"$archs" | wc -l)
  threads=${NVCC_THREADS:-$(( sass < 1 ? 1 : (sass < cores ? sass : cores) ))}
  jobs=${NVCC_JOBS:-$(( cores / threads > 1 ? cores / threads : 1 ))}
  jobs=$(( jobs < ${#stale[@]} ? jobs : ${#stale[@]} ))
  # longest first: the last compile time of each unit (work/<unit>.seconds), else (cold) its number of
  # kernels, which predicts nvcc's time far better than the source size (each is a k-bucket instantiation)
  order=$(for u in "${stale[@]}"; do
      echo "$(cat "$work/$u.seconds" 2>/dev/null || echo 0) $(grep -c __global__ "$src/$u.cu" || true) $u"
    done | sort -k1,1nr -k2,2nr | cut -d' ' -f3)
  echo "[gpu-vectors] nvcc: ${#stale[@]} of ${#units[@]} units to build, $jobs at once, --threads $threads each"
  compile_unit() {  # $1 = unit; env: nvcc flags archs threads src out work
    local u=$1 t0 secs
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    if ! "$nvcc" $flags --resource-usage --threads "$threads" $archs -I"$src" -fatbin -o "$out/$u.fatbin.tmp" \
        "$src/$u.cu" > "$work/$u.log" 2>&1; then
      echo "[gpu-vectors] nvcc FAILED for $u.cu:" >&2
      grep -v '^ptxas info\|^    [0-9]* bytes stack frame' "$work/$u.log" >&2
      rm -f "$out/$u.fatbin.tmp"
      return 1
    fi
    grep -o "Compiling entry function '[^']*'" "$work/$u.log" | cut -d"'" -f2 | sort -u > "$work/$u.kernels"
    mv "$out/$u.fatbin.tmp" "$out/$u.fatbin"
    mv "$work/$u.stamp.next" "$work/$u.stamp"
    secs=$(( ($(date +%s%N) - t0) / 1000000 ))
    printf '%d.%d\n' $(( secs / 1000 )) $(( secs % 1000 / 100 )) > "$work/$u.seconds"
    echo "[gpu-vectors]   $u: $(cat "$work/$u.seconds") s, $(wc -l < "$work/$u.kernels") kernels, $(stat -c %s "$out/$u.fatbin") bytes"
  }
  export -f compile_unit
  export nvcc flags archs threads src out work
  if ! printf '%s\n' $order | xargs -P "$jobs" -I{} bash -c 'compile_unit {}'; then
    echo "[gpu-vectors] nvcc failed (logs in $work/<unit>.log)" >&2
    rm -f "$out/index"  # the runtime must not take a partial build for a complete one
    exit 1
  fi
fi

# a kernel name must be exported by one unit only: the runtime finds kernels by name across units
dups=$(for u in "${units[@]}"; do sed "s/\$/ $u/" "$work/$u.kernels"; done | sort | awk '
  $1 == prev { print $1 " in " prevUnit ".cu and " $2 ".cu"; bad = 1 } { prev = $1; prevUnit = $2 }')
if [ -n "$dups" ]; then
  echo "[gpu-vectors] a kernel is defined in two compile units (KernelModule looks kernels up by name):" >&2
  echo "$dups" >&2
  rm -f "$out/index"
  exit 1
fi
printf '%s.fatbin\n' "${units[@]}" > "$out/index.tmp"
mv "$out/index.tmp" "$out/index"
total=0
for u in "${units[@]}"; do total=$(( total + $(stat -c %s "$out/$u.fatbin") )); done
if [ ${#stale[@]} -gt 0 ]; then
  echo "[gpu-vectors] nvcc built ${#stale[@]} of ${#units[@]} units in $(( $(date +%s) - start )) s ($total bytes in all)"
else
  echo "[gpu-vectors] kernels up to date (${#units[@]} units in $out)"
fi
