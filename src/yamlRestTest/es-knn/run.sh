#!/usr/bin/env bash
# Elasticsearch's own knn YAML tests (rest-api-spec/src/yamlRestTest/resources/rest-api-spec/test/search.vectors in
# an Elasticsearch checkout: they are in no published artifact, so bring a copy) run twice or more against a node with
# the plugin: as written (dense_vector: what this node and this runner can pass at all), then with every indexed
# dense_vector field mapped as gpu_vector of each index type given (DenseVectorAsGpuVector). Prints per test the
# result of each run and, last, the tests dense_vector passes that a gpu_vector run does not.
#   src/yamlRestTest/es-knn/run.sh DIR [INDEX_TYPE ...]      (default index types: flat graph)
#   FILTER=45_,170_ src/yamlRestTest/es-knn/run.sh DIR flat   (only files or tests containing one of the texts)
# env: OUT (default target/es-knn): the Maven logs (es-<run>.log) and results (results.tsv).
#      ASSUME (default mapper.vectors.bit_vectors): cluster features Elasticsearch retired (its nodes no longer publish
#      them, its own runner knows them as historical), taken as present; the dense_vector run shows they are.
set -euo pipefail
dir=${1:?usage: run.sh DIR_OF_SEARCH_VECTORS_YML [INDEX_TYPE ...]}
shift
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(flat graph)
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=${OUT:-$root/target/es-knn}
mkdir -p "$out"
runs=(dense_vector "${types[@]}")
for run in "${runs[@]}"; do
  extra=()
  [ "$run" = dense_vector ] || extra=(-Dtests.yaml.as_gpu_vector="$run")
  echo ">> $run" >&2
  (cd "$root" && ./mvnw -B -o verify -pl plugin -Dgv.nvcc.skip=true -Dtest=NONE -Dsurefire.failIfNoSpecifiedTests=false \
    -Dit.test=YamlRestIT -Dtests.yaml.dir="$dir" ${FILTER:+-Dtests.yaml.filter="$FILTER"} \
    -Dtests.yaml.assume_features="${ASSUME-mapper.vectors.bit_vectors}" "${extra[@]}") \
    > "$out/es-$run.log" 2>&1 || true  # failed tests fail the build; the results are read from the log
  grep -E '^\[yamlrest\] [0-9]+ passed' "$out/es-$run.log" | sed "s/^/   $run: /" >&2 \
    || { echo "no results in $out/es-$run.log" >&2; exit 1; }
  # "[yamlrest] PASS file / test (12 ms)", "[yamlrest] FAIL file / test: why", "[yamlrest] SKIP file / test: why"
  sed -nE 's/^\[yamlrest\] (PASS|FAIL|SKIP) (.*)$/\1\t\2/p' "$out/es-$run.log" \
    | sed -E 's/^(PASS)\t(.*) \([0-9]+ ms\)$/\1\t\2/; s/^(FAIL|SKIP)\t([^:]*): .*$/\1\t\2/' \
    | awk -F'\t' '{print $2 "\t" $1}' | sort > "$out/$run.tsv"
  # why each failed test failed: the text after its last "failed: " (the answer it got), without what differs from
  # run to run (timing, index uuids, node ids)
  sed -nE 's/^\[yamlrest\] FAIL ([^:]*): .* failed: (.*)$/\1\t\2/p' "$out/es-$run.log" \
    | sed -E 's/"took":[0-9]+,//; s/"index_uuid":"[^"]*",?//g; s/"node":"[^"]*",?//g' | sort > "$out/$run.why"
done
python3 - "$out" "${runs[@]}" <<'EOF'
import sys
out, runs = sys.argv[1], sys.argv[2:]
results = {run: dict(line.rstrip("\n").split("\t") for line in open(f"{out}/{run}.tsv")) for run in runs}
tests = sorted(set().union(*results.values()))
with open(f"{out}/results.tsv", "w") as f:
    f.write("test\t" + "\t".join(runs) + "\n")
    for t in tests:
        f.write(t + "\t" + "\t".join(results[r].get(t, "-") for r in runs) + "\n")
print("| runs | " + " | ".join(runs) + " |")
print("|---|" + "---|" * len(runs))
for status in ("PASS", "FAIL", "SKIP"):
    print(f"| {status} | " + " | ".join(str(sum(1 for v in results[r].values() if v == status)) for r in runs) + " |")
lost = [(t, r) for t in tests for r in runs[1:] if results[runs[0]].get(t) == "PASS" and results[r].get(t) != "PASS"]
print(f"\npassed with dense_vector, not with gpu_vector: {len(lost)}")
for t, r in lost:
    print(f"  {r}: {t} ({results[r].get(t, 'not run')})")
# a test that fails with dense_vector too (a check of another version, a module the node lacks) must fail the same way
why = {run: dict(line.rstrip("\n").split("\t", 1) for line in open(f"{out}/{run}.why")) for run in runs}
differ = [(t, r) for t in tests for r in runs[1:]
          if results[runs[0]].get(t) == "FAIL" and results[r].get(t) == "FAIL" and why[runs[0]].get(t) != why[r].get(t)]
print(f"failed with both, with another answer: {len(differ)}")
for t, r in differ:
    print(f"  {r}: {t}\n    dense_vector: {why[runs[0]].get(t, '')[:300]}\n    {r}: {why[r].get(t, '')[:300]}")
print(f"per test: {out}/results.tsv")
EOF
