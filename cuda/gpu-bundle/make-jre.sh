#!/usr/bin/env bash
# Builds a small Java 25 runtime (jlink, ~28 MB packed) for a GPU machine that has no JDK.
# Usage: cuda/gpu-bundle/make-jre.sh OUTDIR   -> OUTDIR/jre.tgz (unpacks to ./jre)
set -euo pipefail
out=${1:?usage: make-jre.sh OUTDIR}
jdk=${JDK:-/usr/lib/jvm/temurin-25-jdk-amd64}
tmp=$(mktemp -d)
"$jdk/bin/jlink" --add-modules java.base,jdk.unsupported,java.logging,java.management,jdk.management,java.xml,java.naming,java.net.http,java.sql,jdk.incubator.vector,jdk.crypto.ec \
  --strip-debug --no-man-pages --no-header-files --compress=zip-9 --output "$tmp/jre" 2>/dev/null
mkdir -p "$out"
tar -C "$tmp" -czf "$out/jre.tgz" jre
rm -rf "$tmp"
ls -la "$out/jre.tgz"
