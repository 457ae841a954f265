#!/usr/bin/env bash
# gpu-vectors demo: builds the plugin (tests skipped), starts a local Elasticsearch 9.5.3 node with it installed,
# loads Fashion-MNIST (Debian package dataset-fashion-mnist; synthetic data if it cannot be installed) into a
# gpu_vector field via _bulk, runs a few knn queries (hits, scores, timings, recall vs brute force), stops the node.
#
#   ./demo.sh                                  10,000 train images, 5 test-image queries, k=10, index_options flat
#   ./demo.sh --docs 60000 --queries 20 --k 10 --num-candidates 100 --index-options flat --similarity l2_norm
#   DEMO_SKIP_BUILD=1 ./demo.sh ...            reuse the last build
#   DEMO_MAVEN_ARGS="-o -Dgv.nvcc.skip=true"   extra Maven arguments for the build
#   DEMO_PLUGIN_ZIP=none ./demo.sh             vanilla node with dense_vector (no plugin)
# Needs a JDK 22+ (picked like ./mvnw does); as root the node runs as the system user gpuvectors-es.
set -euo pipefail
cd "$(dirname "$0")"

DATA_DIR=/usr/share/datasets/fashion-mnist
if [ ! -r "$DATA_DIR/train-images-idx3-ubyte.gz" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo ">> installing Fashion-MNIST (apt-get install dataset-fashion-mnist)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq dataset-fashion-mnist </dev/null >/dev/null \
      || { apt-get update -qq </dev/null && apt-get install -y -qq dataset-fashion-mnist </dev/null >/dev/null; } \
      || echo ">> WARNING: could not install dataset-fashion-mnist; the demo will use synthetic data"
  else
    echo ">> WARNING: $DATA_DIR missing and not root: the demo will use synthetic data (install: apt-get install dataset-fashion-mnist)"
  fi
fi

# same JDK selection as ./mvnw (JAVA_HOME if >= 22, else the newest JDK >= 22 under /usr/lib/jvm)
. ./.mvn/select-jdk.sh

if [ -z "${DEMO_SKIP_BUILD:-}" ]; then
  echo ">> building the plugin (tests skipped)"
  # shellcheck disable=SC2086
  ./mvnw -B -q -pl plugin -am -DskipTests ${DEMO_MAVEN_ARGS:-} package dependency:build-classpath \
    -Dmdep.includeScope=test -Dmdep.outputFile=target/demo-classpath.txt
fi

ES_HOME=$(ls -d plugin/target/elasticsearch-dist/elasticsearch-* | head -n 1)
PLUGIN_ZIP=${DEMO_PLUGIN_ZIP:-$(ls plugin/target/gpu-vectors-*.zip 2>/dev/null | head -n 1 || true)}
if [ -z "$PLUGIN_ZIP" ]; then
  echo "no plugin zip in plugin/target (expected gpu-vectors-<version>.zip from the package phase)" >&2
  exit 1
fi
[ "$PLUGIN_ZIP" = none ] || PLUGIN_ZIP=$(realpath "$PLUGIN_ZIP")

exec "$JAVA_HOME/bin/java" -cp "plugin/target/test-classes:$(cat plugin/target/demo-classpath.txt)" \
  -Dtests.es.home="$(realpath "$ES_HOME")" -Dtests.plugin.zip="$PLUGIN_ZIP" \
  org.gpuvectors.yamlrest.Demo "$@"
