#!/bin/bash
# docs/make_pictures.sh [BUILD]: the README's picture, made from profd's
# own output so that it stays true: a PyTorch CPU training step
# (tests/workloads/py_torch_train.py) profiled at 999 Hz for 8 s, dumped
# as the SVG flame graph profctl writes, and that SVG as a headless
# Chromium shows it, in docs/img/flamegraph.{svg,png}.  As root (profd
# loads BPF programs); needs Debian's python3 with python3-torch and
# chromium (setup.sh installs both).
set -eu
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:-build}" && pwd)
OUT=docs/img
T=$(mktemp -d)
JOB= PROFD=
trap '[ -n "$JOB" ] && kill "$JOB" 2>/dev/null; [ -n "$PROFD" ] && kill "$PROFD" 2>/dev/null; rm -rf "$T"' EXIT
command -v chromium >/dev/null || { echo "make_pictures: chromium is missing" >&2; exit 1; }
PY=${PYTHON:-/usr/bin/python3} # Debian's: python3-torch is installed for it
"$PY" -c 'import torch' 2>/dev/null || { echo "make_pictures: python3-torch is missing for $PY" >&2; exit 1; }

# Run from a folder of its own with a plain name (Python makes the
# script's path absolute): the frames then say /tmp/pytorch-job/train.py,
# not where this tree or a temporary folder happens to be.
JOBDIR=/tmp/pytorch-job
mkdir "$JOBDIR" || { echo "make_pictures: $JOBDIR exists: remove it first" >&2; exit 1; }
trap '[ -n "$JOB" ] && kill "$JOB" 2>/dev/null; [ -n "$PROFD" ] && kill "$PROFD" 2>/dev/null; rm -rf "$T" "$JOBDIR"' EXIT
cp tests/workloads/py_torch_train.py "$JOBDIR/train.py"
"$PY" "$JOBDIR/train.py" 30 >"$T/job.out" 2>&1 &
JOB=$!
for _ in $(seq 1 300); do grep -q ready "$T/job.out" && break; sleep 0.1; done
grep -q ready "$T/job.out" || { echo "make_pictures: the training job did not start" >&2; exit 1; }
"$BUILD/profd" --config /dev/null --state-dir "$T/state" --socket "$T/sock" --no-history \
	--rate 999 --pid "$JOB" 2>"$T/profd.err" &
PROFD=$!
for _ in $(seq 1 100); do "$BUILD/profctl" --socket "$T/sock" stats >/dev/null 2>&1 && break; sleep 0.1; done
sleep 8
mkdir -p "$OUT"
"$BUILD/profctl" --socket "$T/sock" dump --pid "$JOB" --format svg \
	--title "A PyTorch training step: Python and native frames in one stack (profd, 8 s at 999 Hz)" \
	-o "$OUT/flamegraph.svg"
# The SVG's own size, so the picture is the whole graph and nothing else.
size=$(sed -n 's/.*<svg[^>]* width="\([0-9]*\)"[^>]* height="\([0-9]*\)".*/\1,\2/p' "$OUT/flamegraph.svg" | head -1)
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
	--window-size="${size:-1200,800}" --screenshot="$PWD/$OUT/flamegraph.png" \
	"file://$PWD/$OUT/flamegraph.svg" 2>"$T/chromium.err" ||
	{ cat "$T/chromium.err" >&2; exit 1; }
echo "make_pictures: $OUT/flamegraph.svg ($(wc -c <"$OUT/flamegraph.svg") bytes), $OUT/flamegraph.png (${size:-1200,800})"
