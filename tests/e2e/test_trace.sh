#!/bin/bash
# e2e: `profctl dump --format trace` and `record --format trace`, the
# timeline as Chrome's Trace Event Format (docs/guide/outputs.md), from
# a real profd run with --off-cpu on tests/workloads/py_timeline.py (two
# threads burn CPU in functions of their own, one naps).  The file is
# checked for structure (tests/data/trace_check.py: B/E well nested per
# thread, timestamps in order, every thread named), then opened the way
# users open it: speedscope (npm, runs offline) in headless chromium,
# which must list a profile per thread of the workload and show alpha_work
# and beta_work on their threads; a screenshot of its flame chart of the
# alpha thread is kept in $BUILD/tests/tmp/trace_speedscope.png.
. "$(dirname "$0")/lib.sh"

PY=$(command -v python3) || fail "python3 missing (a dependency)"
. "$(dirname "$0")/timeline.sh"
CHECK=$SRC/tests/data/trace_check.py
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}


# summarize FILE: trace_check's summary in FILE.summary.
summarize() { "$PY" "$CHECK" "$1" >"$1.summary" || fail "trace_check refused $1"; }

timeline_start
ctl dump --pid "$WPID" --format trace -o "$T/dump.trace.json" || fail "dump --format trace failed"
summarize "$T/dump.trace.json"

"$PY" - "$T/dump.trace.json.summary" "$T/wl.out" "$WPID" "$WL" <<'PYEOF' || fail "the dump's timeline is wrong"
import json, sys
s = json.load(open(sys.argv[1]))
roles = dict(l.split() for l in open(sys.argv[2]) if len(l.split()) == 2)
pid, wl = int(sys.argv[3]), sys.argv[4]
by_tid = {t["tid"]: t for t in s["threads"]}
def bad(msg):
    print("  " + msg, file=sys.stderr)
    for t in s["threads"]:
        print("  tid %d %s: %s" % (t["tid"], t["name"],
              {f: (n, t["ms"].get(f)) for f, n in t["frames"].items() if wl in f}), file=sys.stderr)
    sys.exit(1)
if any(t["pid"] != pid for t in s["threads"]):
    bad("a thread of another process")
def ms_in(t, fn):
    return sum(v for f, v in t["ms"].items() if f.startswith(fn + " (" + wl + ":"))
for role, fn, other in (("alpha", "alpha_work", "beta_work"), ("beta", "beta_work", "alpha_work")):
    t = by_tid.get(int(roles[role]))
    if not t:
        bad("no thread for %s (tid %s)" % (role, roles[role]))
    # 4 s of a busy thread: most of it in its own function, as long bars.
    if ms_in(t, fn) < 1500:
        bad("%s: %s lasts %.0f ms in 4 s" % (role, fn, ms_in(t, fn)))
    if ms_in(t, other):
        bad("%s has %s" % (role, other))
    if t["first"] < 0 or t["last"] > 12000:
        bad("%s: events at %s..%s ms" % (role, t["first"], t["last"]))
sl = by_tid.get(int(roles["sleeper"]))
naps = sl and sum(n for f, n in sl["frames"].items() if f.startswith("sleeper_wait (" + wl))
if not naps or naps < 20:
    bad("the sleeper: %s bars through sleeper_wait; expected dozens of 50 ms naps" % naps)
if int(roles["main"]) not in by_tid:
    bad("no track for the main thread")
print("  alpha %.0f ms of alpha_work, beta %.0f ms of beta_work, sleeper %d naps" % (
    ms_in(by_tid[int(roles["alpha"])], "alpha_work"),
    ms_in(by_tid[int(roles["beta"])], "beta_work"), naps))
PYEOF
ok "dump --format trace: a track per thread, each thread's own work as merged bars, the sleeper's naps"

# record -- CMD: the whole command's timeline, from its first events.
ctl record --format trace -o "$T/rec.trace.json" -- "$PY" "$WL" 2 >"$T/rec.out" 2>"$T/rec.err" ||
	fail "record --format trace failed: $(cat "$T/rec.err")"
summarize "$T/rec.trace.json"
"$PY" - "$T/rec.trace.json.summary" "$T/rec.out" "$WL" <<'PYEOF' || fail "the recorded timeline is wrong"
import json, sys
s = json.load(open(sys.argv[1]))
roles = dict(l.split() for l in open(sys.argv[2]) if len(l.split()) == 2)
by_tid = {t["tid"]: t for t in s["threads"]}
for role in ("alpha", "beta", "sleeper", "main"):
    if int(roles[role]) not in by_tid:
        sys.exit("  no track for %s (tid %s): %s" % (role, roles[role], sorted(by_tid)))
if not any(f.startswith("alpha_work (" + sys.argv[3]) for f in by_tid[int(roles["alpha"])]["frames"]):
    sys.exit("  the alpha track has no alpha_work")
print("  recorded %d tracks" % len(by_tid))
PYEOF
grep -q "wrote $T/rec.trace.json" "$T/rec.err" || fail "record did not say what it wrote: $(cat "$T/rec.err")"
ok "record --format trace -- CMD: every thread of the command"

# CUDA calls (the stand-in libraries of test_gpu_cuda.sh): each a
# "[CUDA call]" bar of its length over the stack that made it.
if [ "$cuda" = yes ]; then
	gpu_app_run
	ctl dump --pid "$GPID" --format trace -o "$T/gpu.trace.json" || fail "gpu dump failed"
	summarize "$T/gpu.trace.json"
	"$PY" - "$T/gpu.trace.json.summary" "$GPID" <<'PYEOF' || fail "the CUDA calls' bars are wrong"
import json, sys
s = json.load(open(sys.argv[1]))
t = [t for t in s["threads"] if t["tid"] == int(sys.argv[2])]
if not t or "[CUDA call]" not in t[0]["frames"]:
    sys.exit("  no CUDA calls on gpu_app's main thread: %s" % s["threads"])
n, ms = t[0]["frames"]["[CUDA call]"], t[0]["ms"]["[CUDA call]"]
# gpu_app: 131 outermost calls; 50 cuCtxSynchronize of 20 ms among them.
if n != 131:
    sys.exit("  %d CUDA call bars, expected 131" % n)
if not 950 <= ms <= 1600:
    sys.exit("  CUDA calls last %d ms, expected about 1.0-1.3 s" % ms)
for f in ("driver_syncs", "cuCtxSynchronize", "launch_all", "cudaLaunchKernel"):
    if f not in t[0]["frames"]:
        sys.exit("  no bar of %s" % f)
print("  %d CUDA call bars, %d ms, under driver_syncs and launch_all" % (n, ms))
PYEOF
	ok "CUDA calls as bars of their length over the stacks that made them"
else
	echo "note: CUDA part not run: $cuda"
fi
stop_profd

# The viewer.  speedscope loads a local file offline the way its own CLI
# does: index.html#localProfilePath=JS, a script that calls
# speedscope.loadFileFromBase64(name, data).  Our script then drives the
# page as a user would (keys: n next profile, 3 sandwich view) and writes
# what it showed into a hidden <pre> that --dump-dom prints.
SS_DIR=${PROFD_TEST_CACHE:-/var/cache/profd-tests}/speedscope
SS_HTML=$SS_DIR/node_modules/speedscope/dist/release/index.html
[ -x "$CHROMIUM" ] || fail "$CHROMIUM is missing (packaging/setup.sh installs chromium)"
if [ ! -f "$SS_HTML" ]; then
	command -v npm >/dev/null 2>&1 || fail "speedscope is not in $SS_DIR and npm is missing (packaging/setup.sh installs both)"
	mkdir -p "$SS_DIR" && npm install --silent --prefix "$SS_DIR" speedscope >"$T/npm.log" 2>&1 ||
		fail "npm install speedscope: $(tail -3 "$T/npm.log")"
fi

# viewer_page MODE: the script speedscope loads, MODE "walk" (every
# profile's name and, in the sandwich view, its function names) or a tid
# (show that thread's flame chart, for the screenshot).
viewer_page() {
	{
		printf 'speedscope.loadFileFromBase64("rec.trace.json", "%s");\n' \
			"$(base64 -w0 "$T/rec.trace.json")"
		sed "s/@MODE@/$1/" <<'JSEOF'
(function () {
	var mode = '@MODE@', out = [], seen = {}, tries = 0;
	function text() { return document.body ? document.body.innerText : ''; }
	function title() { var m = text().match(/[^\n]*\(tid \d+\)/); return m ? m[0] : ''; }
	function key(k) {
		window.dispatchEvent(new KeyboardEvent('keypress', { key: k, bubbles: true }));
		window.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true }));
	}
	function finish() {
		var pre = document.createElement('pre');
		pre.id = 'profd-results';
		pre.style.display = 'none';
		pre.textContent = out.join('\n') + '\nend=1';
		document.body.appendChild(pre);
	}
	function step() {
		var t = title();
		if (!t) {
			if (++tries > 100) { out.push('error=no profile shown'); return finish(); }
			return setTimeout(step, 100);
		}
		if (mode !== 'walk') {
			if (t.indexOf('(tid ' + mode + ')') >= 0 || ++tries > 100)
				return finish();
			key('n');
			return setTimeout(step, 200);
		}
		if (seen[t]) { key('1'); return finish(); }
		seen[t] = 1;
		key('3'); /* sandwich: a table of the profile's functions */
		/* Read once the table shows (6 s at most: a thread without
		 * such functions has none to show, and a loaded machine draws
		 * late: a fresh-root run once read beta's table empty after
		 * 2 s, beta's own 2.6 s of beta_work in the file). */
		(function collect(n) {
			var names = {};
			(text().match(/[A-Za-z_]+_(work|wait) \(/g) || []).forEach(function (f) { names[f] = 1; });
			if (!Object.keys(names).length && n < 30)
				return setTimeout(function () { collect(n + 1); }, 200);
			out.push('profile=' + t + ' functions=' + Object.keys(names).join(','));
			key('n');
			setTimeout(step, 300);
		})(0);
	}
	setTimeout(step, 100);
})();
JSEOF
	} >"$T/viewer_$1.js"
}

chrome() {
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--allow-file-access-from-files --user-data-dir="$(mktemp -d "$T/chrome.XXXXXX")" "$@"
}

viewer_page walk
chrome --virtual-time-budget=60000 --window-size=1400,900 --dump-dom \
	"file://$SS_HTML#localProfilePath=${T#/}/viewer_walk.js" >"$T/dom.html" 2>"$T/chromium.log" ||
	fail "chromium --dump-dom failed: $(tail -3 "$T/chromium.log")"
results=$(sed -n '/<pre id="profd-results"/,/end=1/p' "$T/dom.html" | sed 's/^<pre[^>]*>//')
echo "$results" | sed 's/^/  speedscope: /'
grep -q 'end=1' <<<"$results" || fail "the speedscope page did not finish (DOM in $T/dom.html)"
pid=$(awk '$1 == "main" { print $2 }' "$T/rec.out")
for role in main alpha beta sleeper; do
	tid=$(awk -v r=$role '$1 == r { print $2 }' "$T/rec.out")
	grep -qE "^profile=python3 \(pid $pid\), [^ ]+ \(tid $tid\)" <<<"$results" ||
		fail "speedscope lists no profile for $role (tid $tid)"
done
prof_of() { grep -E "\(tid $(awk -v r="$1" '$1 == r { print $2 }' "$T/rec.out")\)" <<<"$results"; }
prof_of alpha | grep -q 'functions=.*alpha_work (' || fail "speedscope shows no alpha_work on the alpha thread"
prof_of beta | grep -q 'functions=.*beta_work (' || fail "speedscope shows no beta_work on the beta thread"
prof_of sleeper | grep -q 'functions=.*sleeper_wait (' || fail "speedscope shows no sleeper_wait on the sleeper"
prof_of alpha | grep -q 'beta_work' && fail "speedscope shows beta_work on the alpha thread"
ok "speedscope lists a profile per thread, each with its own functions"

# A picture for people: the alpha thread's flame chart in time order.
shot_dir=$BUILD/tests/tmp
mkdir -p "$shot_dir"
alpha=$(awk '$1 == "alpha" { print $2 }' "$T/rec.out")
viewer_page "$alpha"
chrome --virtual-time-budget=15000 --window-size=1400,900 --screenshot="$T/speedscope.png" \
	"file://$SS_HTML#localProfilePath=${T#/}/viewer_$alpha.js" >/dev/null 2>>"$T/chromium.log" ||
	fail "chromium --screenshot failed: $(tail -3 "$T/chromium.log")"
[ "$(stat -c %s "$T/speedscope.png")" -gt 20000 ] || fail "the screenshot is suspiciously small"
cp "$T/speedscope.png" "$shot_dir/trace_speedscope.png"
echo "PASS test_trace (screenshot: $shot_dir/trace_speedscope.png)"
