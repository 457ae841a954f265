#!/bin/bash
# session 20, call 1: the graph build of Fashion-MNIST as the code stands (phases), against Lucene HNSW on all cores
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
ls /tmp/fmnist
BENCH_ARGS="5 3 graph,ivf_flat false" bash "$here/run-gpu.sh" build 2>&1 | grep -v '^\s*at ' | tail -40
