#!/usr/bin/env bash
# One device call on a 2-GPU machine (kind nvidia-h200-x2), results under $OUT (a tarball).
#   part 1: multi-GPU warm-worker and device-lock tests, then the KernelBench runner on both GPUs
#   part 2+: the cache benchmark (warm start, dispatch, 4 processes on one cache) on GPU 1, the
#            KernelBench runner on GPU 0 and then on GPU 1 too
# The runner takes tasks from one queue (--claim) with several tasks in flight per GPU: their
# builds and verifications overlap, their timings never do (the device lock). It resumes from
# benchmarks/results/h200/kernelbench/ (tracked, so it travels). Needs the KernelBench data in
# .carry/kernelbench/ (carried: ../shared does not travel).
set -u
PART=${1:-1}
LIMIT=${LIMIT:-570}          # seconds this script may use in all
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export CUDAL1_KERNELBENCH=$PWD/.carry/kernelbench/cudal1_h100_dev.jsonl
OUT=${OUT:-$PWD/benchmarks/results/device}
W=$OUT/work; mkdir -p $W
R=benchmarks/results/h200
python3 setup.py -q egg_info >$W/egg_info.log 2>&1 || cat $W/egg_info.log
nvidia-smi --query-gpu=index,name,driver_version,memory.used --format=csv > $W/gpus_$PART.txt
cat $W/gpus_$PART.txt
left() { echo $(( LIMIT - SECONDS )); }

run_gpu() {   # run_gpu GPU TAG SECONDS: one runner on one GPU, on the shared queue TAG
  local g=$1 tag=$2 secs=$3
  CUDA_VISIBLE_DEVICES=$g TORCHINDUCTOR_COMPILE_THREADS=2 timeout -s TERM $secs \
    python3 benchmarks/kernelbench_runner.py --data $CUDAL1_KERNELBENCH --device cuda \
      --claim $tag --jobs ${JOBS:-3} --task-timeout 400 --max-seconds $(( secs - 150 )) \
      --out $R/kernelbench > $W/runner_${tag}_gpu$g.log 2>&1
}
summary() {
  python3 benchmarks/kernelbench_runner.py --data $CUDAL1_KERNELBENCH --device cuda \
    --summary-only --out $R/kernelbench > $W/runner_summary.log 2>&1
  grep -h "^L[0-9]" $W/runner_*_gpu*.log | wc -l
  head -24 $R/kernelbench/summary.md
}

if [ "$PART" = 1 ]; then
  timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_warm_workers.py \
    tests/test_device_lock.py 2>&1 | tail -30 > $W/gpu_tests_x2.log
  tail -4 $W/gpu_tests_x2.log
  run_gpu 0 p1 $(( $(left) - 10 )) &
  run_gpu 1 p1 $(( $(left) - 10 )) &
  wait
else
  # GPU 1: the cache benchmark alone first (its timings are not lock-aware), then the runner.
  run_gpu 0 p$PART $(( $(left) - 10 )) &
  ( mkdir -p $W/cache_bench
    OUT=$W/cache_bench CUDA_VISIBLE_DEVICES=1 timeout ${CACHE_S:-300} python3 benchmarks/cache_bench.py \
      --device cuda --baselines eager,inductor > $W/cache_bench/stdout.log 2>&1
    run_gpu 1 p$PART $(( $(left) - 10 )) ) &
  wait
  tail -16 $W/cache_bench/stdout.log
fi
summary
cp -r $R/kernelbench $W/
tar czf $OUT/results_x2_part$PART.tgz -C $W . && rm -rf $W
ls -la $OUT
