#!/usr/bin/env bash
J=/usr/lib/jvm/temurin-25-jdk-amd64/bin/java
for t in 1:a 2:b 2:c; do
  th=${t%%:*}; lab=${t##*:}; mkdir -p /tmp/ord/$lab
  s=$(date +%s)
  $J -Xmx16g --add-modules jdk.incubator.vector -cp "/work/main/.device/lib/*" -Dgv.scale.queries=300 -Dgv.scale.cpuQueries=300 \
    -Dgv.scale.candidates=10,20 -Dgv.scale.params=nprobe=2 -Dgv.scale.threads=$th -Dgv.scale.phases=exact,build,search -Dgv.scale.dir=/tmp/ord/$lab \
    org.gpuvectors.codec.IvfPqScaleBenchmark 100000 768 /tmp/ord/$lab 2>&1 | grep -v '^WARNING' > /tmp/ord/$lab.log
  echo "== $lab threads $th ($(( $(date +%s) - s )) s)"; grep 'row:\|force-merge\|segments' /tmp/ord/$lab.log | head -8
done
