#!/usr/bin/env bash
# One device call on a 2-GPU machine (kind nvidia-h200-x2), results under $OUT (a tarball).
#   part 1: multi-GPU warm-worker and device-lock tests, cache benchmark (warm start, dispatch,
#           4 processes on one cache), then the KernelBench runner on both GPUs
#   part 2: real models on GPU 1 beside the KernelBench runner on both GPUs
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

runner() {   # runner TAG SECONDS: one runner per GPU on a shared queue
  local tag=$1 secs=$2 g
  for g in 0 1; do
    CUDA_VISIBLE_DEVICES=$g TORCHINDUCTOR_COMPILE_THREADS=2 timeout -s TERM $secs \
      python3 benchmarks/kernelbench_runner.py --data $CUDAL1_KERNELBENCH --device cuda \
        --claim $tag --jobs ${JOBS:-5} --task-timeout 400 --max-seconds $(( secs - 150 )) \
        --out $R/kernelbench > $W/runner_${tag}_gpu$g.log 2>&1 &
  done
  wait
  python3 benchmarks/kernelbench_runner.py --data $CUDAL1_KERNELBENCH --device cuda \
    --summary-only --out $R/kernelbench > $W/runner_summary.log 2>&1
  grep -h "^L[0-9]" $W/runner_${tag}_gpu*.log | wc -l
  head -30 $R/kernelbench/summary.md
}

if [ "$PART" = 1 ]; then
  timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_warm_workers.py \
    tests/test_device_lock.py 2>&1 | tail -30 > $W/gpu_tests_x2.log
  tail -4 $W/gpu_tests_x2.log
  mkdir -p $W/cache_bench
  OUT=$W/cache_bench CUDA_VISIBLE_DEVICES=0 timeout 200 python3 benchmarks/cache_bench.py \
    --device cuda --baselines eager,inductor > $W/cache_bench/stdout.log 2>&1
  tail -16 $W/cache_bench/stdout.log
  runner p1 $(( $(left) - 10 ))
else
  mkdir -p $W/real
  CUDA_VISIBLE_DEVICES=1 OUT=$W/real timeout $(( $(left) - 60 )) python3 benchmarks/real_models.py \
    --models resnet18,bert,gpt2 --dtypes bf16,fp32 --out $W/real > $W/real/stdout.log 2>&1 &
  runner p2 $(( $(left) - 10 ))
  wait
  tail -12 $W/real/stdout.log
fi
cp -r $R/kernelbench $W/
tar czf $OUT/results_x2_part$PART.tgz -C $W . && rm -rf $W
ls -la $OUT
