#!/bin/bash
# session 20, call 7: the IVF and graph builds again, 7 times each on the GPU (run-to-run noise of call 6's IVF rows)
here=$(cd "$(dirname "$0")" && pwd)
BENCH_ARGS="7 1 ivf_flat,ivf_pq,graph false" bash "$here/run-gpu.sh" build 2>&1 | grep -E 'build [0-9]|^graph|^lucene|^ivf|^system' | tail -30
