#!/bin/bash
# e2e: `profctl dump --format gecko` and `record --format gecko`, the
# timeline view (docs/guide/outputs.md), from a real profd run with
# --off-cpu: a Python process whose threads do different things (two
# burn CPU in functions of their own, one sleeps in short naps) gets a
# track per thread, each with its CPU samples in time order naming its
# own functions, and the sleeper's blocks as off-CPU intervals carrying
# their stacks.  With the CUDA stand-in libraries (test_gpu_cuda.sh), the
# calls show as CUDA intervals of their known length on the calling
# thread.  tests/data/gecko_check.py checks the file's structure.
. "$(dirname "$0")/lib.sh"

PY=$(command -v python3) || fail "python3 missing (a dependency)"
. "$(dirname "$0")/timeline.sh"
CHECK=$SRC/tests/data/gecko_check.py

# summarize FILE: gecko_check's summary in FILE.summary.
summarize() { "$PY" "$CHECK" "$1" >"$1.summary" || fail "gecko_check refused $1"; }

timeline_start
ctl dump --pid "$WPID" --format gecko -o "$T/dump.gecko.json" || fail "dump --format gecko failed"
summarize "$T/dump.gecko.json"

"$PY" - "$T/dump.gecko.json.summary" "$WPID" "$WL" <<'PYEOF' || fail "the dump's timeline is wrong"
import json, sys
s = json.load(open(sys.argv[1]))
pid, wl = int(sys.argv[2]), sys.argv[3]
threads = s["threads"]
def bad(msg):
    print("  " + msg, file=sys.stderr)
    for t in threads:
        print("  thread %s: %d samples, markers %s, frames %s" % (
            t["name"], t["samples"], {k: (v["n"], round(v["ms"])) for k, v in t["markers"].items()},
            [f for f in t["frames"] if wl in f]), file=sys.stderr)
    sys.exit(1)
tids = [t["tid"] for t in threads]
if any(t["pid"] != pid for t in threads):
    bad("a thread of another process")
if pid not in tids or len(tids) < 4:
    bad("expected the main thread and three workers, got tids %s" % tids)
def calls(t, fn):
    return sum(n for f, n in t["frames"].items() if f.startswith(fn + " (" + wl + ":"))
alpha = [t for t in threads if calls(t, "alpha_work") > 0]
beta = [t for t in threads if calls(t, "beta_work") > 0]
if len(alpha) != 1 or len(beta) != 1 or alpha[0]["tid"] == beta[0]["tid"]:
    bad("alpha_work and beta_work must each be on one thread of their own")
for t, other in ((alpha[0], "beta_work"), (beta[0], "alpha_work")):
    if calls(t, other):
        bad("thread %s has samples of %s" % (t["tid"], other))
    if t["samples"] < 20:
        bad("thread %s: only %d samples in 4 s" % (t["tid"], t["samples"]))
    # Samples within the run: after the file's start, within ~12 s.
    if t["first"] < 0 or t["last"] > 12000:
        bad("thread %s: samples at %s..%s ms" % (t["tid"], t["first"], t["last"]))
sleepers = [t for t in threads if "OffCPU" in t["markers"] and
            any(f.startswith("sleeper_wait (" + wl) for f in t["markers"]["OffCPU"]["frames"])]
if len(sleepers) != 1:
    bad("expected one thread with off-CPU intervals in sleeper_wait, got %d" % len(sleepers))
sl = sleepers[0]["markers"]["OffCPU"]
if sl["n"] < 20 or sl["ms"] < 2000:
    bad("sleeper: %d off-CPU intervals, %d ms; expected dozens of 50 ms naps" % (sl["n"], sl["ms"]))
if calls(sleepers[0], "alpha_work") or calls(sleepers[0], "beta_work"):
    bad("the sleeper has samples of the busy threads' functions")
print("  alpha tid %d: %d samples; beta tid %d: %d samples; sleeper tid %d: %d off-CPU "
      "intervals, %d ms" % (alpha[0]["tid"], alpha[0]["samples"], beta[0]["tid"],
                            beta[0]["samples"], sleepers[0]["tid"], sl["n"], sl["ms"]))
PYEOF
ok "dump --format gecko: a track per thread, samples in order naming each thread's own work, the sleeper's blocks"

# The daemon's bound, counted.
ctl stats >"$T/stats"
grep -qE '^timeline_events +[1-9]' "$T/stats" || fail "no timeline_events in stats"
grep -qE '^timeline_bytes_max +[1-9]' "$T/stats" || fail "no timeline_bytes_max in stats"
grep -qE '^timeline_events_evicted +[0-9]' "$T/stats" || fail "no timeline_events_evicted in stats"
ok "stats count the timeline"

# record -- CMD: the whole command's timeline, from its first events.
ctl record --format gecko -o "$T/rec.gecko.json" -- "$PY" "$WL" 3 >"$T/rec.out" 2>"$T/rec.err" ||
	fail "record --format gecko failed: $(cat "$T/rec.err")"
summarize "$T/rec.gecko.json"
"$PY" - "$T/rec.gecko.json.summary" "$T/rec.out" "$WL" <<'PYEOF' || fail "the recorded timeline is wrong"
import json, sys
s = json.load(open(sys.argv[1]))
roles = dict(l.split() for l in open(sys.argv[2]) if len(l.split()) == 2)
wl = sys.argv[3]
by_tid = {t["tid"]: t for t in s["threads"]}
for role in ("alpha", "beta", "sleeper", "main"):
    if int(roles[role]) not in by_tid:
        sys.exit("  no track for %s (tid %s): %s" % (role, roles[role], sorted(by_tid)))
a = by_tid[int(roles["alpha"])]
if not any(f.startswith("alpha_work (" + wl) for f in a["frames"]):
    sys.exit("  the alpha track has no alpha_work samples")
sl = by_tid[int(roles["sleeper"])]["markers"].get("OffCPU", {"n": 0, "ms": 0})
if sl["n"] < 10:
    sys.exit("  the sleeper track has %d off-CPU intervals" % sl["n"])
print("  recorded %d tracks; alpha %d samples; sleeper %d intervals" % (
    len(by_tid), a["samples"], sl["n"]))
PYEOF
ok "record --format gecko -- CMD: every thread of the command"

# The real viewer's code: the Firefox Profiler's own import and
# processing (npm's @firefox-devtools/profiler-cli, the profiler's code in
# a CLI) loads the recorded file and shows each thread as a track, the
# sleeper's off-CPU markers with their stacks through sleeper_wait.
# Installed once into a cache dir (packaging/setup.sh does it for CI).
# speedscope is not asked: its Firefox importer reads only the DevTools
# panel's single-thread recordings, not this format.
viewer_check() {
	local dir=${PROFD_TEST_CACHE:-/var/cache/profd-tests}/profiler-cli pq sl t
	pq=$dir/node_modules/@firefox-devtools/profiler-cli/dist/profiler-cli.js
	if [ ! -f "$pq" ]; then
		command -v npm >/dev/null 2>&1 || fail "npm is missing (packaging/setup.sh installs it)"
		mkdir -p "$dir" && npm install --silent --prefix "$dir" @firefox-devtools/profiler-cli \
			>"$T/npm.log" 2>&1 || fail "npm install @firefox-devtools/profiler-cli: $(tail -3 "$T/npm.log")"
	fi
	command -v node >/dev/null 2>&1 || fail "npm without node"
	export HOME=$T/home # its session files
	mkdir -p "$HOME"
	pq() { timeout 60 node "$pq" "$@"; }
	# Its server outlives the CLI: stopped on every way out, a failed
	# check's too (one was left running for 20 minutes).
	trap 'timeout 10 node "$pq" stop >/dev/null 2>&1; cleanup' EXIT
	# profiler-cli gives its own server 500 ms to start: on a loaded
	# machine (the sanitizer run: twice in a row once) that is too short,
	# and the server it gave up on, still starting, is in the next try's
	# way.  So up to four tries, the stray server stopped before each
	# next; a refusal of the file itself says something else and fails.
	local try stray loaded=
	for try in 1 2 3 4; do
		pq load "$T/rec.gecko.json" >"$T/pq.load" 2>&1 && { loaded=$try; break; }
		grep -q 'did not become ready' "$T/pq.load" ||
			fail "the Firefox Profiler refused the file: $(cat "$T/pq.load")"
		stray=$(sed -n 's/.*still be running as pid \([0-9]*\).*/\1/p' "$T/pq.load" | head -1)
		[ -n "$stray" ] && kill "$stray" 2>/dev/null
		timeout 10 node "$pq" stop >/dev/null 2>&1
		sleep 2
	done
	[ -n "$loaded" ] || fail "profiler-cli's server did not start in four tries: $(cat "$T/pq.load")"
	[ "$loaded" = 1 ] || echo "  profiler-cli's server started at try $loaded"
	pq profile info >"$T/pq.info" 2>&1 || fail "profiler-cli profile info: $(cat "$T/pq.info")"
	for role in alpha beta sleeper main; do
		t=$(awk -v r=$role '$1 == r { print $2 }' "$T/rec.out")
		grep -qE "t-[0-9]+: .* \[tid $t\]" "$T/pq.info" ||
			{ cat "$T/pq.info" >&2; fail "the Firefox Profiler shows no track for $role (tid $t)"; }
	done
	sl=$(awk '$1 == "sleeper" { print $2 }' "$T/rec.out")
	t=$(grep -E "\[tid $sl\]" "$T/pq.info" | grep -oE 't-[0-9]+' | head -1)
	pq thread select "$t" >/dev/null 2>&1 || fail "profiler-cli thread select $t"
	pq thread markers >"$T/pq.markers" 2>&1 || fail "profiler-cli thread markers failed"
	grep -qE '^ +off-CPU +[0-9]+ markers +\(interval' "$T/pq.markers" ||
		{ cat "$T/pq.markers" >&2; fail "the sleeper's track has no off-CPU interval markers"; }
	pq marker stack m-1 >"$T/pq.stack" 2>&1 || fail "profiler-cli marker stack m-1 failed"
	grep -q "py_timeline.py!sleeper_wait" "$T/pq.stack" ||
		{ cat "$T/pq.stack" >&2; fail "the sleeper's off-CPU marker has no stack through sleeper_wait"; }
	a=$(awk '$1 == "alpha" { print $2 }' "$T/rec.out")
	t=$(grep -E "\[tid $a\]" "$T/pq.info" | grep -oE 't-[0-9]+' | head -1)
	pq thread select "$t" >/dev/null 2>&1 && pq thread samples >"$T/pq.samples" 2>&1 ||
		fail "profiler-cli thread samples failed"
	grep -q "py_timeline.py!alpha_work" "$T/pq.samples" ||
		{ cat "$T/pq.samples" >&2; fail "the alpha track's samples do not name alpha_work"; }
	pq stop >/dev/null 2>&1
	ok "the Firefox Profiler's own import shows every thread, the samples and the off-CPU markers with stacks"
}
viewer_check

if [ "$cuda" = yes ]; then
	gpu_app_run
	ctl dump --pid "$GPID" --format gecko -o "$T/gpu.gecko.json" || fail "gpu dump failed"
	summarize "$T/gpu.gecko.json"
	"$PY" - "$T/gpu.gecko.json.summary" "$GPID" <<'PYEOF' || fail "the CUDA calls' intervals are wrong"
import json, sys
s = json.load(open(sys.argv[1]))
t = [t for t in s["threads"] if t["tid"] == int(sys.argv[2])]
if not t or "CUDA" not in t[0]["markers"]:
    sys.exit("  no CUDA intervals on gpu_app's main thread: %s" % s["threads"])
c = t[0]["markers"]["CUDA"]
# gpu_app: 131 outermost calls; 50 cuCtxSynchronize of 20 ms among them.
if c["n"] != 131:
    sys.exit("  %d CUDA intervals, expected 131" % c["n"])
if not 950 <= c["ms"] <= 1600:
    sys.exit("  CUDA intervals last %d ms, expected about 1.0-1.3 s" % c["ms"])
for f in ("driver_syncs", "cuCtxSynchronize", "launch_all", "cudaLaunchKernel"):
    if f not in c["frames"]:
        sys.exit("  no CUDA interval's stack names %s" % f)
print("  %d CUDA intervals, %d ms, stacks through driver_syncs and launch_all" % (c["n"], c["ms"]))
PYEOF
	ok "CUDA calls as intervals with their stacks on the calling thread"
else
	echo "note: CUDA part not run: $cuda"
fi
stop_profd
echo "PASS test_gecko"
