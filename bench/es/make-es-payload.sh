#!/usr/bin/env bash
# Builds the two payloads that put a real Elasticsearch 9.5.3 node with the plugin, and this benchmark, on the GPU
# machine (no Java, no Maven, no network there; at most 64 MiB travel with one command):
#   .device-es/es1  the JDK (trimmed, xz) and the installed plugin
#   .device-es/es2  Elasticsearch without x-pack/security/the APM agent, run-es.sh, bench_es.py, Fashion-MNIST's test images
#   .device-es/es3  Fashion-MNIST's training images (xz), only for --dataset fashion
# The first command unpacks es1 (and a command 1b es3) into /tmp/esgpu (it stays while the machine is held), the
# second carries es2, starts the node and runs the benchmark. Prints the commands and checks each payload against the
# 64 MiB limit (work tree included).
#
# usage (in the project root, after the plugin is built WITH nvcc, so that its jar carries the kernels:
#        ./mvnw -B -DskipTests package -pl plugin -am):
#   bench/es/make-es-payload.sh
# env: JDK (default /usr/lib/jvm/temurin-25-jdk-amd64), FASHION_DIR (default /usr/share/datasets/fashion-mnist;
#      FASHION=0 leaves Fashion-MNIST out), ALLOW_NO_FATBIN=1 (build the payload even when the kernels are missing:
#      every search then runs on the CPU; for testing these scripts without a GPU).
set -euo pipefail
root=$(pwd); here=$(cd "$(dirname "$0")" && pwd)
J=${JDK:-/usr/lib/jvm/temurin-25-jdk-amd64}
FASHION_DIR=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}
zip=$(ls "$root"/plugin/target/gpu-vectors-*.zip 2>/dev/null | head -1)
[ -n "$zip" ] || { echo "no plugin/target/gpu-vectors-*.zip: build it first: ./mvnw -B -DskipTests package -pl plugin -am" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
# the kernels: without the fatbins (kernels/index and its units) in the cuda jar, the node reports the GPU inactive and every search runs on the CPU
unzip -q -o "$zip" 'gpu-vectors-cuda-*.jar' -d "$work/zipcheck"
listing=$(unzip -Z1 "$work"/zipcheck/gpu-vectors-cuda-*.jar) # not piped into grep -q: pipefail + SIGPIPE
if ! grep -qx 'org/gpuvectors/cuda/kernels/index' <<<"$listing"; then
  if [ "${ALLOW_NO_FATBIN:-0}" = 1 ]; then
    echo "WARNING: $zip has no CUDA kernels (built with -Dgv.nvcc.skip=true?): every search will run on the CPU" >&2
  else
    echo "$zip has no CUDA kernels (built with -Dgv.nvcc.skip=true?): rebuild with nvcc, or ALLOW_NO_FATBIN=1" >&2; exit 2
  fi
fi
dist=$(ls -d "$root"/plugin/target/elasticsearch-dist/elasticsearch-* 2>/dev/null | head -1 || true)
if [ -z "$dist" ]; then  # `package -DskipITs` does not unpack it: take the integ-test-zip from the local repository
  z=$(ls ~/.m2/repository/org/elasticsearch/distribution/integ-test-zip/elasticsearch/*/elasticsearch-*.zip | head -1)
  unzip -q "$z" -d "$work/dist"; dist=$(ls -d "$work"/dist/elasticsearch-* | head -1)
fi
mkdir -p "$root/.device-es/es1" "$root/.device-es/es2" "$root/.device-es/es3"
# .device-es/ is in .gitignore: it travels only when named in carry
# 1. JDK: a jlinked runtime cannot serve (JEP 493 images cannot hold jdk.jlink, which ES's entitlements load),
#    so ship the JDK itself without src.zip, ct.sym and the CDS archives. Built once (xz -9 takes minutes).
if [ ! -f "$root/.device-es/es1/jdk.tar.xz" ]; then
  echo ">> packing the JDK (xz -9, a few minutes)"
  mkdir "$work/jdk" && cp -a "$J"/bin "$J"/conf "$J"/legal "$J"/lib "$J"/release "$work/jdk/"
  rm -f "$work/jdk/lib/src.zip" "$work/jdk/lib/ct.sym" "$work/jdk/lib/server/"*.jsa
  tar cf - -C "$work" jdk | xz -T0 -9 > "$root/.device-es/es1/jdk.tar.xz.tmp"
  mv "$root/.device-es/es1/jdk.tar.xz.tmp" "$root/.device-es/es1/jdk.tar.xz"
fi
# 2. ES + plugin, installed here (the plugin CLI is left out of the payload)
cp -a "$dist" "$work/es"
ES_JAVA_HOME="$J" "$work/es/bin/elasticsearch-plugin" install --batch "file://$zip" >/dev/null
rm -rf "$work/es/modules/x-pack-core" "$work/es/modules/x-pack-security" "$work/es/lib/tools/security-cli" \
  "$work/es/lib/tools/geoip-cli" "$work/es/lib/tools/windows-service-cli" \
  "$work"/es/lib/platform/{darwin-aarch64,darwin-x64,linux-aarch64,windows-x64} \
  "$work"/es/lib/tools/plugin-cli/elasticsearch-plugin-cli-bc-*.jar
# the APM module must exist, and hold a jar named like the agent; the agent itself is only attached when tracing is on
agent=$(basename "$(ls "$work"/es/modules/apm/elastic-apm-agent-*.jar)")
rm "$work/es/modules/apm/$agent"
(cd "$work" && printf 'Manifest-Version: 1.0\n' > m && "$J/bin/jar" cfm "es/modules/apm/$agent" m)
printf 'cluster.name: gpu-bench\nnode.name: bench\nnetwork.host: 127.0.0.1\nhttp.port: 9200\ndiscovery.type: single-node\npath.data: data\npath.logs: logs\n' > "$work/es/config/elasticsearch.yml"
tar cf "$root/.device-es/es1/plugin.tar" -C "$work/es" plugins
rm -rf "$work/es/plugins/"*
# xz: 48 MB instead of the plain tar's 58, which with the work tree came within 2 MiB of a command's 64 MiB
rm -f "$root/.device-es/es2/es.tar"
tar cf - -C "$work" es | xz -6 -T2 > "$root/.device-es/es2/es.tar.xz"
cp "$here/run-es.sh" "$here/bench_es.py" "$here/jfr_fold.py" "$root/.device-es/es2/"
# 3. Fashion-MNIST (the GPU machine has no network): training images in es3 (xz: 22.6 MB instead of gzip's 26.4;
#    es1 has no room for them once the plugin carries its kernels), test images in es2 (as Debian ships them)
rm -f "$root/.device-es/es1/fashion-train.tar.xz" "$root/.device-es/es3/fashion-train.tar.xz" "$root/.device-es/es2/t10k-images-idx3-ubyte.gz"
if [ "${FASHION:-1}" != 0 ]; then
  if [ -f "$FASHION_DIR/train-images-idx3-ubyte.gz" ]; then
    if [ ! -f "$root/.device-es/fashion-train.tar.xz" ]; then
      echo ">> packing Fashion-MNIST's training images (xz -9)"
      mkdir -p "$work/fm/fashion-mnist" && zcat "$FASHION_DIR/train-images-idx3-ubyte.gz" > "$work/fm/fashion-mnist/train-images-idx3-ubyte"
      tar cf - -C "$work/fm" fashion-mnist | xz -T0 -9 > "$root/.device-es/fashion-train.tar.xz.tmp"
      mv "$root/.device-es/fashion-train.tar.xz.tmp" "$root/.device-es/fashion-train.tar.xz"
    fi
    cp "$root/.device-es/fashion-train.tar.xz" "$root/.device-es/es3/"
    cp "$FASHION_DIR/t10k-images-idx3-ubyte.gz" "$root/.device-es/es2/"
  else
    echo "WARNING: no Fashion-MNIST in $FASHION_DIR (apt-get install dataset-fashion-mnist): --dataset fashion will not run there" >&2
  fi
fi
source "$here/payload-sizes.sh"
check_payload_sizes "$root" .device-es/es1 .device-es/es2 .device-es/es3 || exit 3
echo "  command 1: carry [\".device-es/es1\"], command: rm -rf /tmp/esgpu && mkdir -p /tmp/esgpu && tar xJf .device-es/es1/jdk.tar.xz -C /tmp/esgpu && tar xf .device-es/es1/plugin.tar -C /tmp/esgpu && du -sh /tmp/esgpu/*"
[ -f "$root/.device-es/es3/fashion-train.tar.xz" ] && \
echo "  command 1b (only for --dataset fashion, within 30 s): carry [\".device-es/es3\"], command: tar xJf .device-es/es3/fashion-train.tar.xz -C /tmp/esgpu && du -sh /tmp/esgpu/*"
echo "  command 2 (within 30 s): carry [\".device-es/es2\"], command: bash .device-es/es2/run-es.sh --n 1000000 --dims 128 --systems noop,ceiling,gpu --segments both --duration 8"
