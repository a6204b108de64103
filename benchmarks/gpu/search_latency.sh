#!/usr/bin/env bash
# Time to a winner on one GPU, one search at a time (benchmarks/search_latency.py): the
# KernelBench tasks' whole searches with parallel_builds 1 and 4 at "highest", and 4 at "high".
# Results into benchmarks/results/search_latency/<gpu>/ (and a copy in $OUT when set).
#   LIMIT (seconds, default 540), STRIDE (every K-th task, default 30), IDS (these tasks),
#   BUILDS (default 1,4), PRECISIONS (default highest,high: "high" only with the last BUILDS).
# bubblewrap from .carry/bwrap/ where the host has none (its wrapper "run" sets its libraries).
set -u
cd "$(dirname "$0")/../.." || exit 2
LIMIT=${LIMIT:-540}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export CUDAL1_KERNELBENCH=${CUDAL1_KERNELBENCH:-$PWD/.carry/kernelbench/cudal1_h100_dev.jsonl}
command -v bwrap >/dev/null || { [ -x .carry/bwrap/run ] && export CUDAL1_BWRAP=$PWD/.carry/bwrap/run; }
export CUDAL1_SANDBOX=${CUDAL1_SANDBOX:-bwrap}
mapfile -t CPUSETS < <(python3 -m torch_cudal1.bench.timing_cpus 1)
export CUDAL1_TIMING_CPUS=${CPUSETS[0]} CUDAL1_WORK_CPUS=${CPUSETS[1]}
DEV=$(python3 -c 'from benchmarks.paths import device_dir_name; print(device_dir_name("cuda"))')
D=benchmarks/results/search_latency/$DEV; mkdir -p $D
BUILDS=${BUILDS:-1,4}
SEL=${IDS:+--ids $IDS}; SEL=${SEL:---stride ${STRIDE:-30}}
echo "timing CPUs $CUDAL1_TIMING_CPUS, work CPUs $CUDAL1_WORK_CPUS; sandbox: $(python3 -c 'from torch_cudal1.verify import os_sandbox; print(os_sandbox.check() or "ok")')"
timeout $(( LIMIT - 20 )) python3 benchmarks/search_latency.py --device cuda $SEL \
  --precisions highest --builds $BUILDS --max-seconds $(( LIMIT * 6 / 10 )) --out $D 2>&1 | tee $D/run.log
if [ -n "${PRECISIONS:-}" ] || [ $(( LIMIT - SECONDS )) -gt 90 ]; then
  timeout $(( LIMIT - SECONDS - 15 )) python3 benchmarks/search_latency.py --device cuda $SEL \
    --precisions high --builds ${BUILDS##*,} --max-seconds $(( LIMIT - SECONDS - 80 )) --resume --out $D 2>&1 | tee -a $D/run.log
fi
echo "$0 LIMIT=$LIMIT ${IDS:+IDS=$IDS }${STRIDE:+STRIDE=$STRIDE }BUILDS=$BUILDS" > $D/command.txt
[ -n "${OUT:-}" ] && cp $D/search_latency.jsonl $D/search_latency.md $D/run.log $D/command.txt $OUT/ 2>/dev/null
echo "done in ${SECONDS}s"
