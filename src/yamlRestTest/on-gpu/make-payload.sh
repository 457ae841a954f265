#!/usr/bin/env bash
# Builds the three payloads that run the YAML REST suite (YamlRestIT) against a node with a GPU on the GPU machine,
# which has no Java, no Maven and no network, and takes at most 64 MiB a command with the work tree:
#   .device-yaml/y1  the JDK (the one bench/es/make-es-payload.sh packs)
#   .device-yaml/y2  the first half of Elasticsearch (without x-pack: make-es-payload.sh's), the runner's jars and
#                    classes, Elasticsearch's REST API spec
#   .device-yaml/y3  the second half of Elasticsearch, the plugin zip (built with its kernels) and run.sh
# Files a command writes outside the work tree stay while the machine is held (30 s after a command), so the three
# commands it prints must follow each other at once.
#
# usage (in the project root, after `./mvnw -B -DskipTests package -pl plugin -am` WITH nvcc, and after
# `bench/es/make-es-payload.sh` made .device-es/es1/jdk.tar.xz and .device-es/es2/es.tar.xz):
#   src/yamlRestTest/on-gpu/make-payload.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd); cd "$root"
here=src/yamlRestTest/on-gpu
zip=$(ls plugin/target/gpu-vectors-*.zip | head -1)
unzip -Z1 "$zip" | grep -q '^gpu-vectors-cuda-' || { echo "$zip has no cuda jar" >&2; exit 2; }
for f in .device-es/es1/jdk.tar.xz .device-es/es2/es.tar.xz; do
  [ -f "$f" ] || { echo "missing $f: run bench/es/make-es-payload.sh first (FASHION=0 is enough)" >&2; exit 2; }
done
rm -rf .device-yaml && mkdir -p .device-yaml/y1 .device-yaml/y2 .device-yaml/y3
cp .device-es/es1/jdk.tar.xz .device-yaml/y1/
# Elasticsearch in two halves, put together on the machine
split -b 24M .device-es/es2/es.tar.xz .device-yaml/part.
mv .device-yaml/part.aa .device-yaml/y2/es.part.aa
mv .device-yaml/part.ab .device-yaml/y3/es.part.ab
[ ! -e .device-yaml/part.ac ] || { echo "es.tar.xz is over 48 MB: split it in more parts" >&2; exit 3; }
# the runner: the JUnit console, Jackson, the YAML test classes, the REST API spec
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/runner/lib" "$work/runner/classes/org/gpuvectors"
./mvnw -B -q -o -pl plugin dependency:copy-dependencies -DincludeScope=test -DoutputDirectory="$work/deps" >/dev/null
cp "$work"/deps/jackson-*.jar "$work"/deps/snakeyaml-*.jar "$work/runner/lib/"
./mvnw -B -q -o -N dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:1.11.4 \
  -DoutputDirectory="$work/runner/lib" -Dmdep.stripVersion=true >/dev/null
cp -a plugin/target/test-classes/org/gpuvectors/yamlrest "$work/runner/classes/org/gpuvectors/"
cp -a plugin/target/rest-api-spec/rest-api-spec "$work/runner/"
tar cf .device-yaml/y2/runner.tar -C "$work" runner
cp "$zip" "$here/run.sh" .device-yaml/y3/
source bench/es/payload-sizes.sh
check_payload_sizes "$root" .device-yaml/y1 .device-yaml/y2 .device-yaml/y3 || exit 3
echo "  command 1: carry [\".device-yaml/y1\"]: rm -rf /tmp/gvy && mkdir -p /tmp/gvy && tar xJf .device-yaml/y1/jdk.tar.xz -C /tmp/gvy"
echo "  command 2: carry [\".device-yaml/y2\"]: cp .device-yaml/y2/es.part.aa /tmp/gvy/ && tar xf .device-yaml/y2/runner.tar -C /tmp/gvy"
echo "  command 3: carry [\".device-yaml/y3\"]: bash .device-yaml/y3/run.sh [filter]"
