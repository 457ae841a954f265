#!/bin/bash
# session 20, call 8: the 1M x 128 graph build and whole-index k-NN graph (KnnGraphBenchmark, synthetic phase) on this
# session's build steps (reverse links and entry points on the GPU)
here=$(cd "$(dirname "$0")" && pwd)
BENCH_PHASES=synthetic bash "$here/run-gpu.sh" knngraph 100000000 1000000 2>&1 | grep -v '^\s*at ' | grep -v WARNING | tail -30
