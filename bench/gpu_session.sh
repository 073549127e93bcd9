#!/usr/bin/env bash
# One device call for a GPU session (#43), with `.whl` carried (bench/gpu_wheels.sh fills it
# here first, Ray's slimmed tree included):
#   run(command="bash bench/gpu_session.sh", carry=[".whl"], timeout_s=600)
# Each step has its own timeout, cut to what is left before the call's DEADLINE seconds, so a
# slow one leaves the next its time; one log ($OUT/session.log) and each bench's JSON under
# $OUT, kept when a later step fails. In order of what they settle:
#  1. the ~1B and ~8B models end to end (built, scoring, generation, the audit from a folder);
#  2. Ray on the GPU (user inference scored by one worker per GPU, checked against in process
#     and float32 on the CPU) and DP fine-tuning in float32 and bf16 mixed precision;
#  3. the decoding probe at batch 1,024 (the batch-1,024 regression);
#  4. the profiler on generation and scoring;
#  5. scoring and decoding of SmolLM2-135M's architecture re-measured on this card.
set -u
OUT=${OUT:-/tmp/gpu-session}
DEADLINE=${DEADLINE:-570}
mkdir -p "$OUT"
LOG="$OUT/session.log"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl > "$LOG" 2>&1 || { tail "$LOG"; exit 1; }
[ -f .whl/ray-slim.tar.xz ] && python3 -c "import tarfile; tarfile.open('.whl/ray-slim.tar.xz').extractall('/tmp/site', filter='tar')"
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCHINDUCTOR_COMPILE_THREADS=16
nvidia-smi --query-gpu=name,power.limit,memory.total,driver_version --format=csv \
  > "$OUT/nvidia-smi.csv" 2>&1
step() {   # step NAME SECONDS COMMAND...: its output appended to the log, its exit status noted
  local name=$1 seconds=$2 left=$((DEADLINE - SECONDS))
  shift 2
  [ "$left" -lt "$seconds" ] && seconds=$left
  [ "$seconds" -lt 15 ] && { echo "== $name: skipped, no time left" | tee -a "$LOG"; return; }
  echo "== $name (at most $seconds s, at $SECONDS s)" | tee -a "$LOG"
  timeout "$seconds" "$@" >> "$LOG" 2>&1
  echo "== $name: exit $? at $SECONDS s" | tee -a "$LOG"
}
step large 240 python3 -m bench.gpu --only large --json "$OUT/gpu-large.json"
step ray-dp 100 python3 -m bench.gpu --only ray dp-finetune --json "$OUT/gpu-ray-dp.json"
step probe-1024 60 python3 -m bench.gpu_decode_probe --rows 1024 --eager-only \
  --json "$OUT/probe-1024.json"
step profile 70 python3 -m bench.gpu_profile
step scoring-decode 200 python3 -m bench.gpu --only scoring decode --json "$OUT/gpu-sd.json"
grep -E "^\S.* on |\[(ok|FAILED)\]|memory-bound|of the bf16|^== " "$LOG" | tail -n 80
