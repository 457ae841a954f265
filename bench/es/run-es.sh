#!/usr/bin/env bash
# The second command on the GPU machine (carry [".device-es/es2"]), after the first unpacked .device-es/es1 into /tmp/esgpu
# (jdk/, plugins/, fashion-mnist/). Starts Elasticsearch with the plugin as an unprivileged user, runs bench_es.py with
# the given arguments (results under $OUT), copies the node's logs and final stats to $OUT, and stops the node.
#   bash .device-es/es2/run-es.sh --n 1000000 --dims 128 --systems noop,ceiling,gpu --segments both
# env: GV_ES_DIR (default /tmp/esgpu), GV_ES_USER (default gvbench), ES_HEAP (default "-Xms16g -Xmx16g"),
#      ES_EXTRA_OPTS (appended to the node's JVM options), BENCH_S (the benchmark's time limit, default 540 s),
#      PROFILE=1 (JFR recording of the whole benchmark, q.jfr in $OUT; PROFILE_SETTINGS: a .jfc file instead of
#      JFR's "profile" settings, PROFILE_FOLD=1: q.folded.gz, the samples and waits folded by bench/es/jfr_fold.py,
#      instead of the recording),
#      ES_SETTINGS (node settings as "key=value key=value", e.g. "thread_pool.search.size=64": each becomes -Ekey=value).
set -uo pipefail
D=${GV_ES_DIR:-/tmp/esgpu}; P=$(cd "$(dirname "$0")" && pwd); U=${GV_ES_USER:-gvbench}
OUT=${OUT:-/tmp/gvb-out}; mkdir -p "$OUT"
[ -x "$D/jdk/bin/java" ] && [ -d "$D/plugins/gpu-vectors" ] || { echo "first command missing: $D/jdk and $D/plugins"; exit 3; }
echo ">> unpacking Elasticsearch into $D/es"
rm -rf "$D/es"; tar xJf "$P/es.tar.xz" -C "$D"; cp -a "$D/plugins/gpu-vectors" "$D/es/plugins/"; cp "$P/bench_es.py" "$D/"
if [ -f "$P/t10k-images-idx3-ubyte.gz" ]; then mkdir -p "$D/fashion-mnist" && cp "$P/t10k-images-idx3-ubyte.gz" "$D/fashion-mnist/"; fi
id "$U" >/dev/null 2>&1 || useradd -r -M -s /bin/false "$U"
chown -R "$U" "$D/es"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader
python3 -c 'import numpy, sys; print("python", sys.version.split()[0], "numpy", numpy.__version__)'
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' 2>/dev/null || echo "no torch: numpy ground truth"
python3 -c 'import matplotlib; print("matplotlib", matplotlib.__version__)' 2>/dev/null || echo "no matplotlib: no plot"
cd "$D/es"
echo ">> starting Elasticsearch as $U"
# es.secure_settings.source=file_settings: the CLI skips security auto-configuration (x-pack is not shipped)
ES_JAVA_HOME="$D/jdk" CLI_JAVA_OPTS="-Des.secure_settings.source=file_settings" ES_JAVA_OPTS="${ES_HEAP:--Xms16g -Xmx16g} ${ES_EXTRA_OPTS:-}" \
  runuser -u "$U" -- bin/elasticsearch -d -p "$D/es/pid" ${ES_SETTINGS:+$(printf -- ' -E%s' $ES_SETTINGS)} > "$OUT/es-start.log" 2>&1 || { cat "$OUT/es-start.log"; tail -50 "$D"/es/logs/*.log; exit 4; }
up=0
for i in $(seq 1 120); do curl -s "localhost:9200/_cluster/health?wait_for_status=yellow&timeout=1s" >/dev/null 2>&1 && { up=1; break; }; sleep 1; done
[ $up = 1 ] || { echo "Elasticsearch did not come up"; tail -50 "$D"/es/logs/*.log; kill "$(cat "$D/es/pid")"; exit 5; }
echo ">> node up after ${i} s: $(curl -s 'localhost:9200/_gpu_vectors/stats' | head -c 400)"
echo ">> search thread pool: $(curl -s 'localhost:9200/_cat/thread_pool/search?h=name,type,size,queue_size')"
if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$D/prof" && chown "$U" "$D/prof"
  settings=profile; [ -n "${PROFILE_SETTINGS:-}" ] && { cp "$PROFILE_SETTINGS" "$D/prof/q.jfc"; chown "$U" "$D/prof/q.jfc"; settings="$D/prof/q.jfc"; }
  runuser -u "$U" -- "$D/jdk/bin/jcmd" "$(cat "$D/es/pid")" JFR.start name=q settings="$settings" filename="$D/prof/q.jfr" >/dev/null
fi
cd "$D" && PYTHONUNBUFFERED=1 GV_ES_PID="$(cat "$D/es/pid")" GV_FASHION_DIR="$D/fashion-mnist" OUT="$OUT" timeout "${BENCH_S:-540}" python3 "$D/bench_es.py" "$@"
rc=$?
[ $rc = 124 ] && echo ">> the benchmark ran past BENCH_S=${BENCH_S:-540} s and was stopped (results so far are in \$OUT/es_bench.jsonl)"
if [ -n "${PROFILE:-}" ]; then
  runuser -u "$U" -- "$D/jdk/bin/jcmd" "$(cat "$D/es/pid")" JFR.stop name=q >/dev/null
  if [ -n "${PROFILE_FOLD:-}" ]; then
    python3 "$P/jfr_fold.py" "$D/jdk/bin/jfr" "$D/prof/q.jfr" "$OUT/q.folded" && gzip -f "$OUT/q.folded"
  else
    cp "$D"/prof/*.jfr "$OUT/" 2>/dev/null
  fi
fi
curl -s localhost:9200/_gpu_vectors/stats > "$OUT/gpu_stats_final.json"; echo ">> final stats: $(cat "$OUT/gpu_stats_final.json")"
cp "$D"/es/logs/*.log "$OUT/" 2>/dev/null
pid=$(cat "$D/es/pid"); kill "$pid" 2>/dev/null
for i in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
exit $rc
