#!/usr/bin/env bash
# The third command of make-payload.sh on the GPU machine (carry [".device-yaml/y3"]), after the first two unpacked
# the JDK, half of Elasticsearch and the runner into /tmp/gvy: puts Elasticsearch together and runs YamlRestIT against a
# node with the plugin on the GPU (the node runs as an unprivileged user: EsNode). A missing or broken GPU fails the
# run: the suite's `gpu` / `no_gpu` tests follow the node's stats, so the run checks that the node reported one.
#   bash .device-yaml/y3/run.sh [yaml filter, e.g. 80_,85_]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
G=/tmp/gvy; OUT=${OUT:-/tmp/gvy-out}; mkdir -p "$OUT"
cat "$G/es.part.aa" "$here/es.part.ab" | xz -d | tar xf - -C "$G" || exit 2
: > "$G/es/config/elasticsearch.yml" # the benchmark's settings: EsNode gives its own with -E
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
filter=${1:-}
"$G/jdk/bin/java" -cp "$G/runner/classes:$G/runner/lib/*" \
  -Dtests.es.home="$G/es" -Dtests.plugin.zip="$(ls "$here"/gpu-vectors-*.zip)" \
  -Dtests.rest.api.spec="$G/runner/rest-api-spec/api" \
  -Dtests.yaml.dir="$root/src/yamlRestTest/resources/rest-api-spec/test" \
  -Dtests.plugin.api.spec="$root/src/yamlRestTest/resources/rest-api-spec/api" \
  ${filter:+-Dtests.yaml.filter=$filter} -Dtests.work.dir="$OUT/work" \
  org.junit.platform.console.ConsoleLauncher execute --disable-banner --details=tree --disable-ansi-colors \
  --select-class org.gpuvectors.yamlrest.YamlRestIT 2>&1 | tee "$OUT/yaml.log"
rc=${PIPESTATUS[0]}
grep -q 'skipped (.*): for a node without a GPU' "$OUT/yaml.log" \
  || { echo "FAILED: no test was skipped as one for a node without a GPU: the node did not search on the GPU"; rc=1; }
grep '^\[yamlrest\]' "$OUT/yaml.log"
exit $rc
