#!/usr/bin/env bash
# Wheels for the GPU machine (no internet; its image has PyTorch but not these, or other versions):
# the versions this checkout's .venv runs (what CI tests), for CPython 3.12 on x86-64 Linux, into
# .whl/ (git-ignored through the local exclude file). Then, on the GPU machine, with .whl carried:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#     --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD && \
#     python3 -c "import tarfile; tarfile.open('.whl/ray-slim.tar.xz').extractall('/tmp/site')" && \
#     python3 -m bench.gpu --json $OUT/gpu.json
# (bench/gpu_session.sh runs this install, then a session's prepared steps, in one device call.)
set -euo pipefail
cd "$(dirname "$0")/.."
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >> "$exclude"
PACKAGES="transformers tokenizers huggingface_hub httpx2 httpcore2 truststore safetensors peft
          accelerate dacite opacus dp-accounting dm-tree gguf plotly
          jsonschema jsonschema-specifications referencing rpds-py"   # the last four: Ray's
PLATFORMS=""
for n in 17 24 27 28 31 34; do PLATFORMS="$PLATFORMS --platform manylinux_2_${n}_x86_64"; done
for name in $PACKAGES; do
  version=$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('$name'))")
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp $PLATFORMS --platform manylinux2014_x86_64 --platform any \
    -d "${WHEELS:-.whl}" "$name==$version"
done
# Ray's wheel (79 MB) is over a device call's 64 MiB: its installed tree without the Java jars,
# the dashboard's client and the libraries bench.gpu never imports, xz-packed (about 28 MB)
version=$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('ray'))")
unpacked=$(mktemp -d)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 -d "$unpacked" "ray==$version"
(cd "$unpacked" && unzip -q ray-*.whl && rm ray-*.whl && tar cf - --exclude=./ray/jars \
  --exclude=./ray/dashboard/client --exclude=./ray/rllib --exclude=./ray/serve \
  --exclude=./ray/tune --exclude=./ray/train . | xz -T0 -8) > "${WHEELS:-.whl}/ray-slim.tar.xz"
rm -rf "$unpacked"
du -sh "${WHEELS:-.whl}"
sed -n 5,8p bench/gpu_wheels.sh   # the install line for the GPU machine
