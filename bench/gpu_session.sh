#!/usr/bin/env bash
# One device call for a GPU session (#29's next steps, in order of what they settle), with
# `.whl` carried (bench/gpu_wheels.sh fills it here first):
#   run(command="bash bench/gpu_session.sh", carry=[".whl"], timeout_s=600)
# Each step has its own timeout, so that a slow one leaves the next its time; what each writes
# is under $OUT (JSON where the bench writes it, else its log), kept when a later step fails.
#  1. the decoding probe at batch 1,024, its step as generation now runs it (not compiled): the
#     cause of the batch-1,024 regression (9.3% -> 5.6% of the memory bound with the step
#     compiled, since reverted) if it is back at the 11-26 figure, else the in-graph draw;
#  2. the suite's rows that the run of 2026-11-27 did not reach (the ~8B and ~1B models,
#     differential rank, the n-gram Monte Carlo, DP fine-tuning);
#  3. the profiler on the uncompiled graphed step and on scoring (whether attention over the
#     whole static cache binds a decoding step);
#  4. the probe at batch 256 again, by this script (the guide's figure came from its first
#     version).
set -u
OUT=${OUT:-/tmp/gpu-session}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCHINDUCTOR_COMPILE_THREADS=16
nvidia-smi --query-gpu=name,power.limit,memory.total,driver_version --format=csv \
  > "$OUT/nvidia-smi.csv" 2>&1
step() {   # step NAME SECONDS COMMAND...: its output in $OUT/NAME.log, its exit status noted
  local name=$1 seconds=$2
  shift 2
  echo "== $name (at most $seconds s)"
  timeout "$seconds" "$@" > "$OUT/$name.log" 2>&1
  echo "== $name: exit $?" | tee -a "$OUT/$name.log"
  tail -n 15 "$OUT/$name.log"
}
step probe-1024 110 python3 -m bench.gpu_decode_probe --rows 1024 --eager-only \
  --json "$OUT/probe-1024.json"
step suite-rest 260 python3 -m bench.gpu --only large diffrank ngram dp-finetune \
  --json "$OUT/gpu-rest.json"
step profile 100 python3 -m bench.gpu_profile
step probe-256 60 python3 -m bench.gpu_decode_probe --rows 256 --eager-only \
  --json "$OUT/probe-256.json"
