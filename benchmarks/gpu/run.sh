#!/usr/bin/env bash
# GPU benchmarks and tests on one GPU, one step after another, each step skipped when its
# variable is empty, so nothing else on the host disturbs what a step times. Run it from the
# repository root; kernelbench.sh, real_models.sh and gpu_tests.sh beside it set the variables
# for the usual runs.
#
# Results go where each benchmark keeps its current result, benchmarks/results/<benchmark>/<gpu>/
# (<gpu> as benchmarks/paths.py names it, e.g. h200), replacing what was there; logs go to $LOGS
# (default: a new temporary folder). With OUT set, a copy of the results written and the logs is
# left in $OUT/gpu_run.tgz.
#
#   GPU_TESTS='tests/x.py -k y'   GPU tests first (GPU_TESTS_S seconds, default 150;
#                                 GPU_TESTS_JOBS=N: N pytest-xdist workers sharing the GPU)
#   TAIL_GPU_TESTS='tests/...'    GPU tests last, in whatever time is left (skipped under 60 s)
#   SCRIPTS=benchmarks/x.py,...   benchmark scripts taking --out, each into
#                                 benchmarks/results/<script>/<gpu>/ (SCRIPT_S seconds each,
#                                 default 150; SCRIPT_ARGS passed to each)
#   MODELS=resnet18:bf16,...      benchmarks/real_models.py, one process per model (a model that
#                                 kills its process keeps the others), FIRST_S seconds for them
#                                 all; MAX_AUTOTUNE=1 / REDUCE_OVERHEAD=1 also time torch.compile's
#                                 max-autotune / reduce-overhead modes; PLAIN=1 cudal1 without the
#                                 arbiter's CUDA-graph alternative; SKIP_CUDAL1=1 the baselines and
#                                 modes alone; BATCH=N every model's batch (default 32; a batch
#                                 other than 32 goes to <model>_batchN/); DTYPES (default bf16,fp32);
#                                 PRECISION: float32 matmul precision (default highest, PyTorch's;
#                                 high or medium go to <model>_<precision>/)
#   RECHECK=1 (RECHECK_IDS=...)   benchmarks/replay_recheck.py before the runner (RECHECK_S
#                                 seconds, default 240): replayed solutions accepted under older
#                                 verifier rules, and solutions timed while the host disturbed
#                                 them that could have won, verified and timed again
#   RUNNER=1 | IDS=L1_40,...      the KernelBench runner: every task without a record (RUNNER=1),
#                                 or those tasks (IDS; AGAIN=1 even where they have records).
#                                 RETRY=1 also reruns harness failures; STALE=1 the records that
#                                 lack a candidate family the engine proposes now (slowest first,
#                                 as benchmarks/trace_vs_records.py finds), then those whose eager
#                                 timing the host disturbed, then those timed on the Python loop.
#                                 A task whose last record says it cannot end before this script's
#                                 limit is left for the next run (--deadline-seconds; SLOWDOWN: its
#                                 factor on the last record's time, default 2.0). JOBS tasks in
#                                 flight (default 4). FORK: verifier children from the fork-server
#                                 template (1, the default, waits for it; auto forks once it is up;
#                                 0 never). ORDER: the runner's order flag (default --interleave;
#                                 --shortest-first gets the most records from a short run).
#                                 PRECISION (high or medium): the runner at that float32 matmul
#                                 precision, into benchmarks/results/kernelbench_<precision>/<gpu>/
#
# LIMIT (default 560) is the seconds this script may use in all. CUDAL1_KERNELBENCH names the
# KernelBench data (default .carry/kernelbench/cudal1_h100_dev.jsonl). The native timing helpers
# build in the background from the start where a step needs them, and the runner, the scripts
# and the real models wait for them; NATIVE_PREBUILT (default .carry/native) may hold a build
# from an earlier run on the same torch and CUDA, imported instead of built, and the build made
# here is left in $LOGS/native/ for the next run. One physical core is kept for timings
# (CUDAL1_TIMING_CPUS), the rest do the work (CUDAL1_WORK_CPUS).
set -u
LIMIT=${LIMIT:-560}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export CUDAL1_KERNELBENCH=${CUDAL1_KERNELBENCH:-$PWD/.carry/kernelbench/cudal1_h100_dev.jsonl}
NATIVE_PREBUILT=${NATIVE_PREBUILT:-.carry/native}
W=${LOGS:-$(mktemp -d -t cudal1-gpu-run-XXXXXX)}; mkdir -p $W
R=benchmarks/results
DEV=$(python3 -c 'from benchmarks.paths import device_dir_name; print(device_dir_name("cuda"))')
WRITTEN=()   # results folders this run wrote, copied into $OUT at the end
left() { echo $(( LIMIT - SECONDS )); }
# interrupts per CPU so far, one line each (the columns of /proc/interrupts summed)
irqs() { awk 'NR == 1 {n = NF; next} {for (i = 2; i <= n + 1; i++) if ($i ~ /^[0-9]+$/) s[i] += $i}
              END {for (i = 2; i <= n + 1; i++) print s[i] + 0}' /proc/interrupts; }
# the host's load average at each step (load.txt): a figure timed on a busy host shows up here
load() { echo "${SECONDS}s $1: load $(cut -d' ' -f1-3 /proc/loadavg)" >> $W/load.txt; }
# registers the backend's entry point from the checkout (egg-info on PYTHONPATH), no pip needed
python3 setup.py -q egg_info >$W/egg_info.log 2>&1 || cat $W/egg_info.log
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,memory.used --format=csv > $W/gpu.txt
lscpu > $W/lscpu.txt 2>&1
mapfile -t CPUSETS < <(python3 -m torch_cudal1.bench.timing_cpus 1)
T=${CPUSETS[0]}; WORK=${CPUSETS[1]}
echo "results under $R/*/$DEV; logs in $W; timing CPUs $T; work CPUs $WORK" | tee $W/cpus.txt
KB=$R/kernelbench/$DEV
[ -n "${PRECISION:-}" ] && [ "$PRECISION" != highest ] && KB=$R/kernelbench_$PRECISION/$DEV
mkdir -p $KB
rm -f $KB/claims-*.txt   # a queue left by an earlier run would hide unfinished tasks
# Only where GPU tests, scripts or the runner may need them: the build loads every work CPU for a
# minute or two, and a real model timed meanwhile has its host-bound variants slowed.
if [ -n "${GPU_TESTS:-}${TAIL_GPU_TESTS:-}${SCRIPTS:-}${RECHECK:-}${IDS:-}${RUNNER:-}${RETRY:-}${STALE:-}" ]; then
  ( CUDAL1_NATIVE=1 timeout 240 taskset -c $WORK python3 -m torch_cudal1.bench.native $NATIVE_PREBUILT $W/native \
      > $W/native_build.log 2>&1; touch $W/native_done ) &
else
  touch $W/native_done
fi
wait_native() { while [ ! -f $W/native_done ] && [ $(left) -gt ${1:-120} ]; do sleep 2; done; }

if [ -n "${GPU_TESTS:-}" ]; then
  load gpu_tests
  secs=${GPU_TESTS_S:-150}; [ $secs -gt $(( $(left) - 40 )) ] && secs=$(( $(left) - 40 ))
  timeout $secs python3 -m pytest -m gpu -v --durations=0 -p no:cacheprovider \
    ${GPU_TESTS_JOBS:+-n $GPU_TESTS_JOBS} $GPU_TESTS > $W/gpu_tests.log 2>&1
  tail -4 $W/gpu_tests.log
fi

SCRIPTS=${SCRIPTS:-}
[ -n "$SCRIPTS" ] && wait_native
for s in ${SCRIPTS//,/ }; do
  n=$(basename $s .py); d=$R/$n/$DEV; mkdir -p $d; load $n; WRITTEN+=($d)
  timeout ${SCRIPT_S:-150} taskset -c $T,$WORK python3 $s --out $d ${SCRIPT_ARGS:-} > $W/$n.log 2>&1
  tail -16 $W/$n.log
done

if [ -n "${MODELS:-}" ]; then
  wait_native   # a quiet host (above)
  d=$R/real_models/$DEV; mkdir -p $d; WRITTEN+=($d); end=$(( SECONDS + ${FIRST_S:-300} ))
  # never past this script's own limit (less the copy at the end)
  [ $end -gt $(( LIMIT - 40 )) ] && end=$(( LIMIT - 40 ))
  for item in ${MODELS//,/ }; do
    [ $(( end - SECONDS )) -lt 60 ] && break
    n=${item//:/_}; [ -n "${BATCH:-}" ] && [ "$BATCH" != 32 ] && n=${n}_batch$BATCH
    [ -n "${PRECISION:-}" ] && [ "$PRECISION" != highest ] && n=${n}_$PRECISION
    mkdir -p $d/$n; load $n
    CUDAL1_TIMING_CPUS=$T CUDAL1_WORK_CPUS=$WORK CUDAL1_NATIVE=0 timeout $(( end - SECONDS )) \
      taskset -c $T,$WORK python3 benchmarks/real_models.py --models $item --dtypes ${DTYPES:-bf16,fp32} \
      ${MAX_AUTOTUNE:+--max-autotune} ${REDUCE_OVERHEAD:+--reduce-overhead} ${PLAIN:+--plain} ${SKIP_CUDAL1:+--skip-cudal1} ${BATCH:+--batch $BATCH} \
      ${PRECISION:+--precision $PRECISION} --out $d/$n > $d/$n/stdout.log 2>&1
    tail -n +3 $d/$n/real_models.md 2>/dev/null
  done
  # one table over every model's current result in the folder
  python3 benchmarks/real_models_table.py $d/*/real_models.json > $d/real_models_table.md 2>$W/real_models_table.log
  cat $d/real_models_table.md
fi

if [ -n "${RECHECK:-}" ]; then
  # one verification each, before any search: the replay winners accepted under older rules
  wait_native
  secs=${RECHECK_S:-240}; [ $secs -gt $(( $(left) - 40 )) ] && secs=$(( $(left) - 40 )); load recheck
  WRITTEN+=($KB)
  CUDAL1_VERIFY_FORKSERVER=${FORK:-1} CUDAL1_TIMING_CPUS=$T CUDAL1_WORK_CPUS=$WORK timeout -s TERM $secs \
    python3 benchmarks/replay_recheck.py --data $CUDAL1_KERNELBENCH --device cuda --out $KB \
      --jobs ${JOBS:-4} --max-seconds $(( secs - 100 )) ${RECHECK_IDS:+--ids $RECHECK_IDS} \
      > $W/recheck.log 2>&1
  tail -20 $W/recheck.log
fi

if [ -n "${IDS:-}${RUNNER:-}${RETRY:-}${STALE:-}" ]; then
  wait_native
  secs=$(( $(left) - 30 )); load runner; WRITTEN+=($KB)
  irqs > $W/irqs_start.txt
  # who else runs on the timing core: runnable threads there, sampled each second
  ( taskset -p -c $WORK $BASHPID >/dev/null; while sleep 1; do ps -eLo stat=,psr=,pid=,tid=,comm= \
      | awk -v t=$T '$1 ~ /^R/ && $2 == t {n++; s = s " " $3 "/" $4 ":" $5} END {if (n) print n s}'; done \
      > $W/timing_core_threads.txt 2>/dev/null ) & SAMPLER=$!
  TORCHINDUCTOR_COMPILE_THREADS=2 CUDAL1_VERIFY_FORKSERVER=${FORK:-1} \
    CUDAL1_TIMING_CPUS=$T CUDAL1_WORK_CPUS=$WORK timeout -s TERM $secs \
    python3 benchmarks/kernelbench_runner.py --data $CUDAL1_KERNELBENCH --device cuda ${ORDER---interleave} \
      --claim one --jobs ${JOBS:-4} --task-timeout 400 --max-seconds $(( secs - 120 )) --deadline-seconds $(( secs - 10 )) \
      ${SLOWDOWN:+--expected-slowdown $SLOWDOWN} \
      ${RETRY:+--retry-failed} ${IDS:+--ids $IDS} ${AGAIN:+--again} ${STALE:+--stale} \
      ${PRECISION:+--precision $PRECISION} --out $KB > $W/runner.log 2>&1
  kill $SAMPLER 2>/dev/null
  irqs > $W/irqs_end.txt
  # interrupts each CPU took during the runner: the timing core should not be the busiest
  paste -d' ' $W/irqs_start.txt $W/irqs_end.txt | awk '{printf "cpu%d %d\n", NR - 1, $2 - $1}' \
    > $W/irqs_during_runner.txt
  # samples with one runnable thread there (the timing's), and with more (contention)
  awk '{c[$1 > 1 ? "2+" : "1"]++} END {for (k in c) print k, c[k]}' $W/timing_core_threads.txt \
    > $W/timing_core_top.txt
  awk '$1 > 1' $W/timing_core_threads.txt | head -20 >> $W/timing_core_top.txt
  python3 benchmarks/kernelbench_runner.py --data $CUDAL1_KERNELBENCH --device cuda \
    --summary-only --out $KB > $W/runner_summary.log 2>&1
  grep -h "^L[0-9]" $W/runner.log | tail -30
fi

if [ -n "${TAIL_GPU_TESTS:-}" ] && [ $(left) -gt 60 ]; then
  wait_native 90
  load tail_gpu_tests
  timeout $(( $(left) - 30 )) python3 -m pytest -m gpu -v --durations=0 -p no:cacheprovider $TAIL_GPU_TESTS \
    > $W/gpu_tests_tail.log 2>&1
  tail -4 $W/gpu_tests_tail.log
fi
load end; cat $W/load.txt
cat $W/native_build.log 2>/dev/null
if [ -n "${OUT:-}" ]; then
  mkdir -p $OUT
  for d in $(printf '%s\n' ${WRITTEN[@]+"${WRITTEN[@]}"} | sort -u); do
    mkdir -p $W/results/$(dirname ${d#$R/}); cp -r $d $W/results/$(dirname ${d#$R/})/
  done
  tar czf $OUT/gpu_run.tgz -C $W . && ls -la $OUT
fi
echo "logs: $W"
