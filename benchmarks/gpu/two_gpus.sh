#!/usr/bin/env bash
# Work spread over the two GPUs of one host, from the repository root:
#   bash benchmarks/gpu/two_gpus.sh tests        the tests that need two GPUs (warm workers on
#                                                 both, the device lock per physical GPU), then the
#                                                 KernelBench runner on both GPUs
#   bash benchmarks/gpu/two_gpus.sh kernelbench  the KernelBench runner on both GPUs
#   bash benchmarks/gpu/two_gpus.sh real_models  real models on both GPUs at once (MODELS0 on
#                                                 GPU 0, MODELS on GPU 1), then the runner on both
# The two runners take tasks from one queue (--claim), several in flight per GPU: their builds and
# verifications overlap, their timings never do (the device lock). Records resume from and go to
# benchmarks/results/kernelbench/<gpu>/, real models to benchmarks/results/real_models/<gpu>/.
# One physical core per GPU is kept for that GPU's timings (CUDAL1_TIMING_CPUS), all other work
# (builds, compiles, checks) runs on the rest (CUDAL1_WORK_CPUS): a launch-bound call is host time.
# Variables as in run.sh: LIMIT (default 570), LOGS, OUT, CUDAL1_KERNELBENCH, NATIVE_PREBUILT,
# JOBS, FORK (default auto), ORDER, IDS/AGAIN, RETRY, DTYPES, MAX_AUTOTUNE, REDUCE_OVERHEAD, PLAIN,
# FIRST_S (seconds for the real models, default 300); GPU_TESTS_S for the tests (default 150).
set -u
MODE=${1:-kernelbench}
LIMIT=${LIMIT:-570}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export CUDAL1_KERNELBENCH=${CUDAL1_KERNELBENCH:-$PWD/.carry/kernelbench/cudal1_h100_dev.jsonl}
NATIVE_PREBUILT=${NATIVE_PREBUILT:-.carry/native}
W=${LOGS:-$(mktemp -d -t cudal1-gpu-run-XXXXXX)}; mkdir -p $W
R=benchmarks/results
DEV=$(python3 -c 'from benchmarks.paths import device_dir_name; print(device_dir_name("cuda"))')
KB=$R/kernelbench/$DEV; RM=$R/real_models/$DEV; mkdir -p $KB
python3 setup.py -q egg_info >$W/egg_info.log 2>&1 || cat $W/egg_info.log
nvidia-smi --query-gpu=index,name,driver_version,memory.used --format=csv > $W/gpus.txt
cat $W/gpus.txt
left() { echo $(( LIMIT - SECONDS )); }
mapfile -t CPUSETS < <(python3 -m torch_cudal1.bench.timing_cpus 2)
T0=${CPUSETS[0]}; T1=${CPUSETS[1]}; WORK=${CPUSETS[2]}
echo "timing CPUs: GPU0 $T0, GPU1 $T1; work CPUs: $WORK; logs in $W" | tee $W/cpus.txt
lscpu > $W/lscpu.txt 2>&1
rm -f $KB/claims-*.txt   # a queue left by an earlier run would hide unfinished tasks
# The native helpers (C++ timed call, L2 flush kernel) for the runner's timings: without them the
# Python timing loop's own host time sits inside every launch-bound sample.
( CUDAL1_NATIVE=1 timeout 240 python3 -m torch_cudal1.bench.native $NATIVE_PREBUILT $W/native \
    > $W/native_build.log 2>&1; touch $W/native_done ) &

run_gpu() {   # run_gpu GPU TAG SECONDS: one runner on one GPU, on the shared queue TAG
  local g=$1 tag=$2 secs=$3 t
  if [ "$g" = 0 ]; then t=$T0; else t=$T1; fi
  local t0=$SECONDS
  while [ ! -f $W/native_done ] && [ $(left) -gt 120 ]; do sleep 2; done
  secs=$(( secs - (SECONDS - t0) ))
  CUDA_VISIBLE_DEVICES=$g TORCHINDUCTOR_COMPILE_THREADS=2 CUDAL1_VERIFY_FORKSERVER=${FORK:-auto} \
    CUDAL1_TIMING_CPUS=$t CUDAL1_WORK_CPUS=$WORK timeout -s TERM $secs \
    python3 benchmarks/kernelbench_runner.py --data $CUDAL1_KERNELBENCH --device cuda ${ORDER---interleave} \
      --claim $tag --jobs ${JOBS:-4} --task-timeout 400 --max-seconds $(( secs - 150 )) \
      --deadline-seconds $(( secs - 10 )) ${RETRY:+--retry-failed} ${IDS:+--ids $IDS} ${AGAIN:+--again} \
      --out $KB > $W/runner_${tag}_gpu$g.log 2>&1
}
real_models() {   # real_models GPU MODELS: benchmarks/real_models.py on that GPU alone, one process
  # per model (a model that kills its process keeps the others), FIRST_S seconds for them all
  local g=$1 t item n; if [ "$g" = 0 ]; then t=$T0; else t=$T1; fi
  local end=$(( SECONDS + ${FIRST_S:-300} )); mkdir -p $RM
  [ $end -gt $(( LIMIT - 40 )) ] && end=$(( LIMIT - 40 ))   # never past this script's limit
  for item in ${2//,/ }; do
    [ $(( end - SECONDS )) -lt 60 ] && break
    n=${item//:/_}; mkdir -p $RM/$n
    CUDA_VISIBLE_DEVICES=$g CUDAL1_TIMING_CPUS=$t CUDAL1_WORK_CPUS=$WORK CUDAL1_NATIVE=0 \
      timeout $(( end - SECONDS )) taskset -c $t,$WORK python3 benchmarks/real_models.py --models $item \
      --dtypes ${DTYPES:-bf16,fp32} ${MAX_AUTOTUNE:+--max-autotune} ${REDUCE_OVERHEAD:+--reduce-overhead} \
      ${PLAIN:+--plain} --out $RM/$n > $RM/$n/stdout.log 2>&1
  done
}

case $MODE in
  tests)
    secs=${GPU_TESTS_S:-150}
    timeout $secs python3 -m pytest -m gpu -v -p no:cacheprovider tests/test_warm_workers.py \
      tests/test_device_lock.py > $W/gpu_tests_two_gpus.log 2>&1
    tail -5 $W/gpu_tests_two_gpus.log
    run_gpu 0 two $(( $(left) - 10 )) & run_gpu 1 two $(( $(left) - 10 )) & wait ;;
  kernelbench)
    run_gpu 0 two $(( $(left) - 10 )) & run_gpu 1 two $(( $(left) - 10 )) & wait ;;
  real_models)
    ( [ -n "${MODELS0-resnet18}" ] && real_models 0 ${MODELS0-resnet18}
      run_gpu 0 two $(( $(left) - 10 )) ) &
    ( [ -n "${MODELS-bert,gpt2}" ] && real_models 1 ${MODELS-bert,gpt2}
      run_gpu 1 two $(( $(left) - 10 )) ) &
    wait
    python3 benchmarks/real_models_table.py $RM/*/real_models.json > $RM/real_models_table.md \
      2>$W/real_models_table.log
    cat $RM/real_models_table.md ;;
  *) echo "usage: $0 tests|kernelbench|real_models" >&2; exit 2 ;;
esac
python3 benchmarks/kernelbench_runner.py --data $CUDAL1_KERNELBENCH --device cuda \
  --summary-only --out $KB > $W/runner_summary.log 2>&1
grep -h "^L[0-9]" $W/runner_*_gpu*.log | wc -l
head -24 $KB/summary.md
if [ -n "${OUT:-}" ]; then
  mkdir -p $OUT $W/results/kernelbench $W/results/real_models
  cp -r $KB $W/results/kernelbench/; [ -d $RM ] && cp -r $RM $W/results/real_models/
  tar czf $OUT/gpu_run.tgz -C $W . && ls -la $OUT
fi
echo "logs: $W"
