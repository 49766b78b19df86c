#!/bin/bash
# docs/make_pictures.sh [BUILD]: the README's pictures, made from profd's
# own output so that they stay true: a PyTorch CPU training step
# (tests/workloads/py_torch_train.py) profiled at 999 Hz for 8 s, dumped
# as the SVG flame graph profctl writes, and that SVG as a headless
# Chromium shows it, in docs/img/flamegraph.{svg,png}; then the same job
# with a data-loader thread as a timeline (dump --format trace) in
# docs/img/timeline.trace.json, and its main thread as speedscope shows
# it in docs/img/timeline.png.  As root (profd loads BPF programs); needs
# Debian's python3 with python3-torch, chromium and speedscope
# (packaging/setup.sh installs all three).
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
kill "$PROFD" "$JOB" 2>/dev/null; wait "$PROFD" "$JOB" 2>/dev/null || true
PROFD= JOB=

# The timeline: the same job fed by a data-loader thread (--loader: it
# reads, decodes and augments batches and hands them over a queue of one;
# every fourth read is slow, and the main thread then waits in
# next_batch), profiled at 199 Hz with --off-cpu so that the waits show
# too, its last 3 s dumped as Trace Event Format (--python-only: the
# Python frames, and the waits' leaves) to docs/img/timeline.trace.json,
# and speedscope's Time Order view of the main thread in
# docs/img/timeline.png.  profd walks no stack for a long block right out
# of a storm of short ones (docs/design/offcpu.md; a busy machine's
# preemptions make such storms), and such a wait shows as "[off-cpu:
# stack not walked]": up to 5 windows, 3 s apart, are dumped until one
# shows next_batch's waits with their stacks and no such bar.
SS_HTML=${PROFD_TEST_CACHE:-/var/cache/profd-tests}/speedscope/node_modules/speedscope/dist/release/index.html
[ -f "$SS_HTML" ] || { echo "make_pictures: speedscope is missing: $SS_HTML (packaging/setup.sh installs it)" >&2; exit 1; }
"$PY" "$JOBDIR/train.py" 60 --loader >"$T/job.out" 2>&1 &
JOB=$!
for _ in $(seq 1 300); do grep -q ready "$T/job.out" && break; sleep 0.1; done
grep -q ready "$T/job.out" || { echo "make_pictures: the training job with --loader did not start" >&2; exit 1; }
"$BUILD/profd" --config /dev/null --state-dir "$T/state2" --socket "$T/sock2" --no-history \
	--rate 199 --off-cpu --pid "$JOB" 2>"$T/profd2.err" &
PROFD=$!
for _ in $(seq 1 100); do "$BUILD/profctl" --socket "$T/sock2" stats >/dev/null 2>&1 && break; sleep 0.1; done
sleep 4
TL=$OUT/timeline.trace.json
for try in 1 2 3 4 5; do
	sleep 3
	"$BUILD/profctl" --socket "$T/sock2" dump --pid "$JOB" --format trace --python-only --since 3s -o "$TL"
	# the main thread: a wait through next_batch down to the queue's, and
	# no wait without its stack
	"$PY" - "$TL" "$JOB" <<'PYEOF' && break
import json, sys
stack, walked = [], False
for e in json.load(open(sys.argv[1]))["traceEvents"]:
    if e.get("tid") != int(sys.argv[2]) or e["ph"] not in "BE":
        continue
    if e["ph"] == "E":
        stack.pop()
        continue
    stack.append(e["name"])
    if e["name"] == "[off-cpu: stack not walked]":
        sys.exit(1)
    if e["name"].startswith("Condition.wait") and any(f.startswith("next_batch (") for f in stack):
        walked = True
sys.exit(0 if walked else 1)
PYEOF
	echo "make_pictures: window $try: no wait in next_batch with its stack, or a wait without one; another" >&2
done
# speedscope opens a local file as its own CLI does: index.html#localProfilePath=JS,
# a script that calls speedscope.loadFileFromBase64(name, data).  Ours then
# presses "n" (next profile) until the main thread (tid = the job's pid)
# shows: speedscope shows one thread at a time.
{
	printf 'speedscope.loadFileFromBase64("timeline.trace.json", "%s");\n' "$(base64 -w0 "$TL")"
	sed "s/@TID@/$JOB/" <<'JSEOF'
(function () {
	var tries = 0;
	function shown() { return document.body && document.body.innerText.indexOf('(tid @TID@)') >= 0; }
	function next() {
		if (shown() || ++tries > 100) return;
		window.dispatchEvent(new KeyboardEvent('keypress', { key: 'n', bubbles: true }));
		window.dispatchEvent(new KeyboardEvent('keydown', { key: 'n', bubbles: true }));
		setTimeout(next, 200);
	}
	setTimeout(next, 200);
})();
JSEOF
} >"$T/show.js"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--allow-file-access-from-files --user-data-dir="$T/chromium" \
	--virtual-time-budget=20000 --window-size=1400,420 --screenshot="$PWD/$OUT/timeline.png" \
	"file://$SS_HTML#localProfilePath=${T#/}/show.js" >/dev/null 2>"$T/chromium.err" ||
	{ cat "$T/chromium.err" >&2; exit 1; }
echo "make_pictures: $TL ($(wc -c <"$TL") bytes), $OUT/timeline.png (1400,420)"
