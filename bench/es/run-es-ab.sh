#!/usr/bin/env bash
# Two builds of the plugin on one machine, against the same segments: runs run-es.sh once per name in ORDER, each
# time with the plugin of that name ($GV_ES_DIR/plugins-<name>/gpu-vectors) on one data path ($GV_ES_DIR/data), so the
# first run loads the indices (--keep flushes them) and the later runs reuse them (--reuse): the same natural segments
# on both sides, and builds alternated so that the node's drift over the session falls on both. Results of run i in
# $OUT/<i>-<name>/; bench/es/compare_ab.py puts them side by side.
#   bash run-es-ab.sh "old new old new" --n 1000000 --dims 768 --systems gpu,ivfpq,graph --segments natural ...
# env: as run-es.sh (GV_ES_DIR, GV_ES_USER, ES_HEAP, BENCH_S ...); ES_SETTINGS gets path.data added.
set -uo pipefail
D=${GV_ES_DIR:-/tmp/esgpu}; P=$(cd "$(dirname "$0")" && pwd); U=${GV_ES_USER:-gvbench}
OUT=${OUT:-/tmp/gvb-out}; order=$1; shift
id "$U" >/dev/null 2>&1 || useradd -r -M -s /bin/false "$U"
mkdir -p "$D/data" && chown -R "$U" "$D/data"
i=0; rc=0
for name in $order; do
  i=$((i + 1))
  [ -d "$D/plugins-$name/gpu-vectors" ] || { echo "no plugin $D/plugins-$name/gpu-vectors"; exit 3; }
  rm -rf "$D/plugins" && cp -a "$D/plugins-$name" "$D/plugins"
  echo ">> run $i: plugin $name"
  OUT="$OUT/$i-$name" ES_SETTINGS="path.data=$D/data ${ES_SETTINGS:-}" bash "$P/run-es.sh" "$@" --keep --reuse || rc=$?
done
exit $rc
