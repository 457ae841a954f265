#!/usr/bin/env bash
# Builds (on a build machine with JDK + Maven + nvcc) the self-contained GPU bundle .device/ at the
# repository root: a jlinked JRE, the cuda and lucene-codec module jars (with the kernel fatbins), their test
# classes, JCuda (its jar and the driver binding's native library only), lucene-core and the JUnit console launcher, the torch benchmark scripts and
# run-gpu.sh. Keep it under ~60 MB. The fatbins are built for GV_CUDA_ARCHS (default here: sm90, the
# H100/H200 of our GPU machine, to keep the build short).
# On the GPU machine (device tool): run with carry [".device"] and command `bash .device/run-gpu.sh`.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
# the project's wrapper (JDK 22+ selection, pinned Maven); MVN_OFFLINE=-o once the dependencies are cached
mvn=${MVN:-"$root/mvnw"}
offline=${MVN_OFFLINE:-}
dev="$root/.device"
# .device/ is in .gitignore (in a worktree .git is a file, so no .git/info/exclude here)
# -am: the parent pom and jcuda-driver-natives are installed too, so that the second command (lucene-codec alone)
# resolves its dependencies from the local repository on a fresh clone
GV_CUDA_ARCHS=${GV_CUDA_ARCHS:-sm90} "$mvn" $offline -q -B -pl cuda,lucene-codec -am install -DskipTests -Dgv.nvcc.skip="${GV_NVCC_SKIP:-false}"
# test scope: Lucene's test framework and JUnit 4 run BaseKnnVectorsFormatTestCase on the GPU too
rm -rf "$root/cuda/target/bundle-deps"
"$mvn" $offline -q -B -pl lucene-codec dependency:copy-dependencies -DincludeScope=test -DoutputDirectory="$root/cuda/target/bundle-deps"
"$mvn" $offline -q -B -N dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:1.11.4 \
  -DoutputDirectory="$root/cuda/target/bundle-deps" -Dmdep.stripVersion=true
rm -rf "$dev/lib" "$dev/bench"
mkdir -p "$dev/lib" "$dev/bench"
rm -f "$dev/jre.tgz"  # the older, larger packing
[ -f "$dev/jre.tar.xz" ] || "$root/cuda/gpu-bundle/make-jre.sh" "$dev"
cp cuda/target/gpu-vectors-cuda-*.jar "$dev/lib/gpu-vectors-cuda.jar"
"$JAVA_HOME/bin/jar" cf "$dev/lib/gpu-vectors-cuda-tests.jar" -C cuda/target/test-classes .
cp lucene-codec/target/gpu-vectors-lucene-codec-*.jar "$dev/lib/gpu-vectors-lucene-codec.jar"
"$JAVA_HOME/bin/jar" cf "$dev/lib/gpu-vectors-lucene-codec-tests.jar" -C lucene-codec/target/test-classes .
cp cuda/target/bundle-deps/jcuda-[0-9]*.jar cuda/target/bundle-deps/gpu-vectors-jcuda-driver-natives-*.jar \
  cuda/target/bundle-deps/lucene-core-*.jar cuda/target/bundle-deps/junit-platform-console-standalone.jar \
  cuda/target/bundle-deps/lucene-test-framework-*.jar cuda/target/bundle-deps/lucene-codecs-*.jar \
  cuda/target/bundle-deps/randomizedtesting-runner-*.jar cuda/target/bundle-deps/junit-4*.jar \
  cuda/target/bundle-deps/hamcrest*.jar "$dev/lib/"
cp cuda/bench/*.py lucene-codec/bench/*.py "$dev/bench/"
cp cuda/gpu-bundle/run-gpu.sh "$dev/run-gpu.sh"
# run-gpu.sh names the cuda test classes it runs: a GPU test class it does not name would never run on the GPU
for t in $(cd cuda/target/test-classes && find org/gpuvectors/cuda -name '*GpuTest.class' | sed 's|/|.|g; s|\.class$||'); do
  grep -q -- "--select-class $t " "$dev/run-gpu.sh" || { echo "run-gpu.sh does not run $t: add it to its tests list" >&2; exit 1; }
done
listing=$(unzip -Z1 "$dev/lib/gpu-vectors-cuda.jar") # not piped into grep -q: pipefail + SIGPIPE
if ! grep -qx 'org/gpuvectors/cuda/kernels/index' <<<"$listing"; then
  echo "WARNING: the jar has no kernel fatbins (nvcc missing?): GPU tests will skip" >&2
fi
du -sh "$dev"; ls -la "$dev" "$dev/lib"
