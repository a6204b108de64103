#!/usr/bin/env bash
# One device call on a one-GPU machine (kind nvidia-h200), results under $OUT (a tarball).
# device_x2.sh's parts need two GPUs; this runs the same pieces one after another, each step
# skipped when its variable is empty, so nothing else on the host disturbs the real models:
#   GPU_TESTS='tests/x.py -k y'   GPU tests (GPU_TESTS_S seconds, default 150)
#   TAIL_GPU_TESTS='tests/...'    GPU tests after everything else, in whatever time is left (the
#                                 runner stops starting tasks well before the limit: session 21's
#                                 calls ended 85-173 s early); skipped with under 60 s left
#   SCRIPTS=benchmarks/x.py,...   benchmark scripts taking --out (each into $OUT's folder named
#                                 after it, SCRIPT_S seconds each, default 150; SCRIPT_ARGS are
#                                 passed to each)
#   MODELS=resnet18:bf16,...      benchmarks/real_models.py, one process per model (a model that
#                                 kills its process keeps the others), FIRST_S seconds for them all;
#                                 MAX_AUTOTUNE=1 / REDUCE_OVERHEAD=1 / PLAIN=1 as in device_x2.sh;
#                                 SKIP_CUDAL1=1: the baselines and torch.compile modes alone
#                                 BATCH=N: every model's batch (default 32)
#   RECHECK=1 (RECHECK_IDS=...)   benchmarks/replay_recheck.py before the runner (RECHECK_S seconds,
#                                 default 240): the replay winners accepted under older verifier
#                                 rules, and the solutions timed while disturbed that could have
#                                 won, verified and timed again, one verification each
#   IDS=L1_40,... (AGAIN=1)       the KernelBench runner on those tasks (RUNNER=1: on every task
#                                 without a record; RETRY=1 also reruns harness failures; STALE=1:
#                                 the records that lack a candidate family the engine proposes
#                                 now, slowest first, as benchmarks/trace_vs_records.py finds,
#                                 then those whose eager timing the host disturbed, then
#                                 those timed on the Python loop; one
#                                 whose last record says it cannot end before the call does is
#                                 left for the next: --deadline-seconds; SLOWDOWN: its factor
#                                 on the last record's time, default 2.0, for four jobs); JOBS
#                                 tasks in flight (default 4); verifier children forked from the
#                                 fork-server template (FORK=1, the default, waits for it; auto,
#                                 the product's default, forks once it is up; 0 never: sessions
#                                 12-13, whose tasks spent a median 45 s outside their phases against
#                                 3 s forked: benchmarks/runner_phases.py)
#                                 ORDER: the runner's order flag (default --interleave;
#                                 --shortest-first: the quickest last records first, for a
#                                 short call)
# The native timing helpers build in the background from the start where needed; the runner,
# the scripts and the real models wait for them. A build comes back in the tarball (native/):
# put it in .carry/native/ and the next call imports it instead (native.import_build).
# One physical core is kept for timings (CUDAL1_TIMING_CPUS), the rest do the work.
# Needs the KernelBench data in .carry/kernelbench/ (carried: ../shared does not travel).
set -u
LIMIT=${LIMIT:-560}          # seconds this script may use in all
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export CUDAL1_KERNELBENCH=$PWD/.carry/kernelbench/cudal1_h100_dev.jsonl
OUT=${OUT:-$PWD/benchmarks/results/device}
W=$OUT/work; mkdir -p $W
R=benchmarks/results/h200
left() { echo $(( LIMIT - SECONDS )); }
# interrupts per CPU so far, one line each (the columns of /proc/interrupts summed)
irqs() { awk 'NR == 1 {n = NF; next} {for (i = 2; i <= n + 1; i++) if ($i ~ /^[0-9]+$/) s[i] += $i}
              END {for (i = 2; i <= n + 1; i++) print s[i] + 0}' /proc/interrupts; }
# the host's load average at each step (load.txt): a figure timed on a busy host shows up here
load() { echo "${SECONDS}s $1: load $(cut -d' ' -f1-3 /proc/loadavg)" >> $W/load.txt; }
python3 setup.py -q egg_info >$W/egg_info.log 2>&1 || cat $W/egg_info.log
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,memory.used --format=csv > $W/gpu.txt
lscpu > $W/lscpu.txt 2>&1
mapfile -t CPUSETS < <(python3 -m torch_cudal1.bench.timing_cpus 1)
T=${CPUSETS[0]}; WORK=${CPUSETS[1]}
echo "timing CPUs $T; work CPUs $WORK" | tee $W/cpus.txt
rm -f $R/kernelbench/claims-*.txt   # a queue left by an earlier call would hide unfinished tasks
# Only where GPU tests, scripts or the runner may need them: the build loads every work CPU for a
# minute or two, and a real model timed meanwhile had its host-bound variants slowed (session 14
# call 2: inductor 1.41-1.64 ms in the CUDA-graph modes' process against 1.07-1.14 later, which
# made torch.compile's modes look 0.68 of inductor).
if [ -n "${GPU_TESTS:-}${TAIL_GPU_TESTS:-}${SCRIPTS:-}${RECHECK:-}${IDS:-}${RUNNER:-}${RETRY:-}${STALE:-}" ]; then
  # a build carried from an earlier call (.carry/native, keyed by sources, torch and CUDA) saves
  # the 74 s a fresh machine spends on it (session 20); else built here and sent back for the next
  ( CUDAL1_NATIVE=1 timeout 240 taskset -c $WORK python3 -m torch_cudal1.bench.native .carry/native $W/native \
      > $W/native_build.log 2>&1; touch $W/native_done ) &
else
  touch $W/native_done
fi

if [ -n "${GPU_TESTS:-}" ]; then
  load gpu_tests
  secs=${GPU_TESTS_S:-150}; [ $secs -gt $(( $(left) - 40 )) ] && secs=$(( $(left) - 40 ))
  timeout $secs python3 -m pytest -m gpu -v --durations=0 -p no:cacheprovider $GPU_TESTS \
    > $W/gpu_tests.log 2>&1
  tail -4 $W/gpu_tests.log
fi

SCRIPTS=${SCRIPTS:-}
[ -n "$SCRIPTS" ] && while [ ! -f $W/native_done ] && [ $(left) -gt 120 ]; do sleep 2; done
for s in ${SCRIPTS//,/ }; do
  n=$(basename $s .py); mkdir -p $W/$n; load $n
  timeout ${SCRIPT_S:-150} taskset -c $T,$WORK python3 $s --out $W/$n ${SCRIPT_ARGS:-} > $W/$n/stdout.log 2>&1
  tail -16 $W/$n/stdout.log
done

if [ -n "${MODELS:-}" ]; then
  while [ ! -f $W/native_done ] && [ $(left) -gt 120 ]; do sleep 2; done   # a quiet host (above)
  d=$W/real; mkdir -p $d; end=$(( SECONDS + ${FIRST_S:-300} ))
  # never past the call's own limit (less the runner's summary and the tarball)
  [ $end -gt $(( LIMIT - 40 )) ] && end=$(( LIMIT - 40 ))
  for item in ${MODELS//,/ }; do
    [ $(( end - SECONDS )) -lt 60 ] && break
    n=${item//:/_}; mkdir -p $d/$n; load $n
    CUDAL1_TIMING_CPUS=$T CUDAL1_WORK_CPUS=$WORK CUDAL1_NATIVE=0 timeout $(( end - SECONDS )) \
      taskset -c $T,$WORK python3 benchmarks/real_models.py --models $item --dtypes ${DTYPES:-bf16,fp32} \
      ${MAX_AUTOTUNE:+--max-autotune} ${REDUCE_OVERHEAD:+--reduce-overhead} ${PLAIN:+--plain} ${SKIP_CUDAL1:+--skip-cudal1} ${BATCH:+--batch $BATCH} \
      --out $d/$n > $d/$n/stdout.log 2>&1
    [ -f $d/real_models.md ] || head -2 $d/$n/real_models.md > $d/real_models.md 2>/dev/null
    tail -n +3 $d/$n/real_models.md >> $d/real_models.md 2>/dev/null
  done
  cat $d/real_models.md
fi

if [ -n "${RECHECK:-}" ]; then
  # one verification each, before any search: the replay winners accepted under older rules
  while [ ! -f $W/native_done ] && [ $(left) -gt 120 ]; do sleep 2; done
  secs=${RECHECK_S:-240}; [ $secs -gt $(( $(left) - 40 )) ] && secs=$(( $(left) - 40 )); load recheck
  CUDAL1_VERIFY_FORKSERVER=${FORK:-1} CUDAL1_TIMING_CPUS=$T CUDAL1_WORK_CPUS=$WORK timeout -s TERM $secs \
    python3 benchmarks/replay_recheck.py --data $CUDAL1_KERNELBENCH --device cuda --out $R/kernelbench \
      --jobs ${JOBS:-4} --max-seconds $(( secs - 100 )) ${RECHECK_IDS:+--ids $RECHECK_IDS} \
      > $W/recheck.log 2>&1
  tail -20 $W/recheck.log
  cp -r $R/kernelbench $W/
fi

if [ -n "${IDS:-}${RUNNER:-}${RETRY:-}${STALE:-}" ]; then
  while [ ! -f $W/native_done ] && [ $(left) -gt 120 ]; do sleep 2; done
  secs=$(( $(left) - 30 )); load runner
  irqs > $W/irqs_start.txt
  # who else runs on the timing core: runnable threads there, sampled each second (session 19:
  # L3_39's eager took 426 involuntary switches there, the timing thread alone pinned to it)
  ( taskset -p -c $WORK $BASHPID >/dev/null; while sleep 1; do ps -eLo stat=,psr=,pid=,tid=,comm= \
      | awk -v t=$T '$1 ~ /^R/ && $2 == t {n++; s = s " " $3 "/" $4 ":" $5} END {if (n) print n s}'; done \
      > $W/timing_core_threads.txt 2>/dev/null ) & SAMPLER=$!
  TORCHINDUCTOR_COMPILE_THREADS=2 CUDAL1_VERIFY_FORKSERVER=${FORK:-1} \
    CUDAL1_TIMING_CPUS=$T CUDAL1_WORK_CPUS=$WORK timeout -s TERM $secs \
    python3 benchmarks/kernelbench_runner.py --data $CUDAL1_KERNELBENCH --device cuda ${ORDER---interleave} \
      --claim one --jobs ${JOBS:-4} --task-timeout 400 --max-seconds $(( secs - 120 )) --deadline-seconds $(( secs - 10 )) \
      ${SLOWDOWN:+--expected-slowdown $SLOWDOWN} \
      ${RETRY:+--retry-failed} ${IDS:+--ids $IDS} ${AGAIN:+--again} ${STALE:+--stale} \
      --out $R/kernelbench > $W/runner.log 2>&1
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
    --summary-only --out $R/kernelbench > $W/runner_summary.log 2>&1
  grep -h "^L[0-9]" $W/runner.log | tail -30
  cp -r $R/kernelbench $W/
fi
if [ -n "${TAIL_GPU_TESTS:-}" ] && [ $(left) -gt 60 ]; then
  while [ ! -f $W/native_done ] && [ $(left) -gt 90 ]; do sleep 2; done
  load tail_gpu_tests
  timeout $(( $(left) - 30 )) python3 -m pytest -m gpu -v --durations=0 -p no:cacheprovider $TAIL_GPU_TESTS \
    > $W/gpu_tests_tail.log 2>&1
  tail -4 $W/gpu_tests_tail.log
fi
load end; cat $W/load.txt
cat $W/native_build.log 2>/dev/null
tar czf $OUT/results_one.tgz -C $W . && rm -rf $W
ls -la $OUT
