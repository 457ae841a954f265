#!/usr/bin/env bash
# Builds a small Java 25 runtime (jlink, ~16 MB packed) for a GPU machine that has no JDK.
# Usage: cuda/gpu-bundle/make-jre.sh OUTDIR   -> OUTDIR/jre.tar.xz (unpacks to ./jre)
# The modules are left uncompressed by jlink and the whole tree is packed with xz: 16 MB against 28 for jlink's
# zip-9 in a tgz, which left the bundle and the work tree just over the 64 MiB a device command carries.
# jdk.jfr: Flight Recorder profiles of the host side on the GPU machine (-XX:StartFlightRecording).
set -euo pipefail
out=${1:?usage: make-jre.sh OUTDIR}
jdk=${JDK:-/usr/lib/jvm/temurin-25-jdk-amd64}
tmp=$(mktemp -d)
"$jdk/bin/jlink" --add-modules java.base,jdk.unsupported,java.logging,java.management,jdk.management,java.xml,java.naming,java.net.http,java.sql,jdk.incubator.vector,jdk.crypto.ec,jdk.jfr \
  --strip-debug --no-man-pages --no-header-files --compress=zip-0 --output "$tmp/jre" 2>/dev/null
mkdir -p "$out"
tar -C "$tmp" -cf - jre | xz -9e -T2 > "$out/jre.tar.xz"
rm -rf "$tmp"
ls -la "$out/jre.tar.xz"
