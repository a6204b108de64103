#!/usr/bin/env bash
# One device call on a 2-GPU machine (kind nvidia-h200-x2), results under $OUT (a tarball).
#   part 1: GPU tests (many-GPU warm workers, device lock, verifier with forked children); the
#           cache benchmark on GPU 1, then the KernelBench runner there, beside it on GPU 0
#   part 2: GPU tests on GPU 1 (forked children on CUDA, AOTInductor candidates), then the runner
#           there (forked children if those passed), beside it on GPU 0
#   part 3: where AOTInductor candidates fail on a GPU (benchmarks/aoti_diag.py), real models on
#           GPU 1, then the runner there, beside it on GPU 0
#   part real: GPU tests of the CUDA-graph wrapper and the arbiter, then real models on both GPUs (MODELS0 on
#           GPU 0, MODELS on GPU 1), then the runner
#   part 4+: the runner on both GPUs
# FORK=1 runs the runner's verifier children from the fork-server template (part 2 sets it for
# GPU 1's runner when its forked GPU tests passed).
# The runner takes tasks from one queue (--claim) with several tasks in flight per GPU: their
# builds and verifications overlap, their timings never do (the device lock). It resumes from
# benchmarks/results/h200/kernelbench/ (tracked, so it travels). Needs the KernelBench data in
# .carry/kernelbench/ (carried: ../shared does not travel).
# Host CPUs: one physical core per GPU is kept for that GPU's timings (CUDAL1_TIMING_CPUS), all
# other work (builds, compiles, checks) runs on the rest (CUDAL1_WORK_CPUS): launch-bound calls
# are host time, and a host busy with other jobs' compiles inflated them several-fold in session 2.
# ORDER=--interleave (default) alternates levels so each call covers levels 1, 2 and 3.
# Parts 3 and real: MODELS=bert,gpt2 DTYPES=bf16 pick the real models (about 150 s each per
# dtype), FIRST_S bounds them (default 300 s); AOTI_DIAG=1 adds part 3's AOTInductor diagnosis;
# RETRY=1 runs again the tasks whose latest record is a failure (of the harness, since fixed).
# MAX_AUTOTUNE=1 / REDUCE_OVERHEAD=1 add torch.compile's max-autotune / reduce-overhead modes to
# the real models, PLAIN=1 cudal1 without the arbiter's CUDA-graph alternative (arbitrate_cudagraph
# off). Part real: MODELS0= / MODELS= (empty) run no real models on GPU 0 / GPU 1; ATTN=1 runs
# benchmarks/attention_check.py there first, COEXIST=1 benchmarks/cudagraph_coexist.py (with
# COEXIST_ARGS);
# GPU_TESTS= (empty) skips its GPU tests, GPU_TESTS_ARGS='tests/x.py -k y' picks them (GPU_TESTS_S
# seconds for them, default 150; each test's name is logged as it ends; TESTS_GPU=1 runs them on GPU 1
# before its models instead of on GPU 0); NO_CUDNN_SDP=1: real models without cuDNN attention.
# IDS=L1_61,... limits the runner to those tasks, AGAIN=1 runs them even where they have records.
# Part real: ALONE_IDS=L2_34,... runs those first on GPU 1, one at a time (ALONE_S seconds), again.
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
mapfile -t CPUSETS < <(python3 -m torch_cudal1.bench.timing_cpus 2)
T0=${CPUSETS[0]}; T1=${CPUSETS[1]}; WORK=${CPUSETS[2]}
echo "timing CPUs: GPU0 $T0, GPU1 $T1; work CPUs: $WORK" | tee $W/cpus_$PART.txt
lscpu > $W/lscpu.txt 2>&1
rm -f $R/kernelbench/claims-*.txt   # a queue left by an earlier call would hide unfinished tasks
# The native helpers (C++ timed call, L2 flush kernel) for the runner's timings: without them the
# Python timing loop's own host time sits inside every launch-bound sample (session 11, call 1:
# the same CUDA graph 0.059 ms on the Python clock, 0.020 ms on the native one in session 10).
# Built beside the first part; the runner waits for it, real models do without (as before).
( CUDAL1_NATIVE=1 timeout 240 python3 -m torch_cudal1.bench.native .carry/native $W/native \
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
      --claim $tag --jobs ${JOBS:-4} --task-timeout 400 --max-seconds $(( secs - 150 )) --deadline-seconds $(( secs - 10 )) ${RETRY:+--retry-failed} \
      ${IDS:+--ids $IDS} ${AGAIN:+--again} \
      --out $R/kernelbench > $W/runner_${tag}_gpu$g.log 2>&1
}
summary() {
  python3 benchmarks/kernelbench_runner.py --data $CUDAL1_KERNELBENCH --device cuda \
    --summary-only --out $R/kernelbench > $W/runner_summary.log 2>&1
  grep -h "^L[0-9]" $W/runner_*_gpu*.log | wc -l
  head -24 $R/kernelbench/summary.md
}

if [ "$PART" = 1 ]; then
  # GPU tests: many-GPU warm workers, the device lock, and the verifier's GPU checks with children
  # forked from the fork-server template (the default on CUDA since session 14).
  timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_warm_workers.py \
    tests/test_device_lock.py 2>&1 | tail -30 > $W/gpu_tests_x2.log
  CUDAL1_VERIFY_FORKSERVER=1 timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider \
    tests/test_verify_gpu.py 2>&1 | tail -30 > $W/gpu_tests_forked.log
  tail -3 $W/gpu_tests_x2.log $W/gpu_tests_forked.log
fi
gpu_tests() {   # on GPU 1 beside GPU 0's runner: forked children on CUDA, AOTInductor candidates,
  # and the verifier's GPU checks with forked children (native CUDA timed call included)
  CUDA_VISIBLE_DEVICES=1 timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider \
    tests/test_forkserver.py tests/test_aoti_candidate.py > $W/gpu_tests_fork_aoti.log 2>&1
  CUDA_VISIBLE_DEVICES=1 CUDAL1_VERIFY_FORKSERVER=1 timeout 150 python3 -m pytest -m gpu -q \
    -p no:cacheprovider tests/test_verify_gpu.py > $W/gpu_tests_forked.log 2>&1
  tail -4 $W/gpu_tests_fork_aoti.log $W/gpu_tests_forked.log
  python3 --version > $W/python_version.txt 2>&1
  if grep -q " passed" $W/gpu_tests_forked.log && ! grep -q "failed\|error" $W/gpu_tests_forked.log \
     && ! grep -q "FAILED tests/test_forkserver" $W/gpu_tests_fork_aoti.log; then
    echo 1 > $W/fork_ok
  fi
}
real_models() {   # real_models GPU MODELS: benchmarks/real_models.py on that GPU alone, one process
  # per model (a model that kills its process keeps the others), FIRST_S seconds for them all
  local g=$1 t item n; if [ "$g" = 0 ]; then t=$T0; else t=$T1; fi
  local d=$W/real_gpu$g end=$(( SECONDS + ${FIRST_S:-300} )); mkdir -p $d
  # never past the call's own limit (less the summary and the tarball): session 10's first call
  # ran GPU tests and then FIRST_S of models past it and came back without its tarball
  [ $end -gt $(( LIMIT - 40 )) ] && end=$(( LIMIT - 40 ))
  for item in ${2//,/ }; do
    [ $(( end - SECONDS )) -lt 60 ] && break
    n=${item//:/_}; mkdir -p $d/$n
    CUDA_VISIBLE_DEVICES=$g CUDAL1_TIMING_CPUS=$t CUDAL1_WORK_CPUS=$WORK CUDAL1_NATIVE=0 \
      timeout $(( end - SECONDS )) taskset -c $t,$WORK python3 benchmarks/real_models.py --models $item --dtypes ${DTYPES:-bf16,fp32} \
      ${MAX_AUTOTUNE:+--max-autotune} ${REDUCE_OVERHEAD:+--reduce-overhead} ${PLAIN:+--plain} \
      ${NO_CUDNN_SDP:+--no-cudnn-sdp} --out $d/$n > $d/$n/stdout.log 2>&1
    [ -f $d/real_models.md ] || head -2 $d/$n/real_models.md > $d/real_models.md
    tail -n +3 $d/$n/real_models.md >> $d/real_models.md
  done
}
if [ "$PART" != real ] && [ "$PART" -le 3 ]; then
  # GPU 1 first runs work that must have that GPU alone, then joins the runner.
  run_gpu 0 p$PART $(( $(left) - 10 )) &
  ( if [ "$PART" = 1 ]; then
      mkdir -p $W/cache_bench
      # on GPU 1's own core: its warm starts and dispatch times are host time
      OUT=$W/cache_bench CUDA_VISIBLE_DEVICES=1 timeout ${FIRST_S:-300} taskset -c $T1 python3 benchmarks/cache_bench.py \
        --device cuda --baselines eager,inductor > $W/cache_bench/stdout.log 2>&1
    elif [ "$PART" = 2 ]; then
      gpu_tests
      [ -f $W/fork_ok ] && FORK=1
    else
      [ -n "${AOTI_DIAG:-}" ] && mkdir -p $W/real && CUDA_VISIBLE_DEVICES=1 timeout 240 \
        python3 benchmarks/aoti_diag.py --out $W/real > $W/real/aoti_diag.log 2>&1
      real_models 1 ${MODELS:-resnet18,bert,gpt2}
    fi
    run_gpu 1 p$PART $(( $(left) - 10 )) ) &
  wait
  tail -n 16 $W/cache_bench/stdout.log $W/real*/stdout.log 2>/dev/null
elif [ "$PART" = real ]; then
  # Real models on both GPUs at once (MODELS0 on GPU 0, MODELS on GPU 1), each GPU then joins
  # the runner.
  TG=${TESTS_GPU:-0}
  real_tests() {
    local secs=${GPU_TESTS_S:-150}; [ $secs -gt $(( $(left) - 40 )) ] && secs=$(( $(left) - 40 ))
    [ -n "${GPU_TESTS-1}" ] && CUDA_VISIBLE_DEVICES=$TG timeout $secs python3 -m pytest -m gpu -v \
      --durations=0 -p no:cacheprovider ${GPU_TESTS_ARGS:-tests/test_graph_inputs.py tests/test_builtin_engine.py \
      tests/test_arbiter.py tests/test_verify_stateful.py} > $W/gpu_tests_real.log 2>&1
  }
  ( [ "$TG" = 0 ] && real_tests
    if [ -n "${COEXIST:-}" ]; then   # which CUDA-graph users can share a process
      mkdir -p $W/coexist; CUDA_VISIBLE_DEVICES=0 timeout ${COEXIST_S:-330} python3 \
        benchmarks/cudagraph_coexist.py --timeout 150 ${COEXIST_ARGS:-} --out $W/coexist \
        > $W/coexist/stdout.log 2>&1
    fi
    if [ -n "${ATTN:-}" ]; then
      mkdir -p $W/attention; CUDA_VISIBLE_DEVICES=0 timeout 200 python3 benchmarks/attention_check.py \
        --data $CUDAL1_KERNELBENCH --device cuda --out $W/attention > $W/attention/stdout.log 2>&1
    fi
    [ -n "${MODELS0-resnet18}" ] && real_models 0 ${MODELS0-resnet18}
    run_gpu 0 p$PART $(( $(left) - 10 )) ) &
  ( [ "$TG" = 1 ] && real_tests
    [ -n "${MODELS-bert,gpt2}" ] && real_models 1 ${MODELS-bert,gpt2}
    if [ -n "${ALONE_IDS:-}" ]; then   # tasks that need the device's memory to themselves
      ( IDS=$ALONE_IDS JOBS=1 AGAIN=1; run_gpu 1 alone ${ALONE_S:-300} )
    fi
    run_gpu 1 p$PART $(( $(left) - 10 )) ) &
  wait
  tail -3 $W/gpu_tests_real.log; cat $W/real*/real_models.md $W/coexist/coexist.jsonl 2>/dev/null
else
  run_gpu 0 p$PART $(( $(left) - 10 )) &
  run_gpu 1 p$PART $(( $(left) - 10 )) &
  wait
fi
summary
cp -r $R/kernelbench $W/
tar czf $OUT/results_x2_part$PART.tgz -C $W . && rm -rf $W
ls -la $OUT
