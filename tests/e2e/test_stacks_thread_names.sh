# profctl stacks names each thread as Python does (threading's
# Thread.name, as py-spy shows it), on a daemon left at its defaults (no
# --off-cpu), on every interpreter pythons.sh lists: the main thread
# "MainThread", one named at creation "CustomThreadName-3", one named by
# default with a target "Thread-N (worker)" ("Thread-N" before 3.10), all
# blocked (tests/workloads/py_thread_names.py).  Each name must be on the
# thread the script itself says has it, in the text header and in the
# JSON's python_name; the OS name stays in the JSON's name.  Then the same
# threads computing: dump --by-thread roots them "NAME (TID)", alone and
# under their process's root, and the trace and gecko timelines name
# their tracks so (the process still by its main thread's OS name).
# A thread that exits during record --by-thread is still subtracted.
# Last, a thread named in a subinterpreter (3.12+: each interpreter has
# its own threading) beside one of the main interpreter.  (3.14 and
# 3.15 come from sid where get_debian_pythons.sh can fetch them, else are
# skipped with its reason.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pythons.sh"

SCRIPT=$SRC/tests/workloads/py_thread_names.py

# start_names PY [spin]: run $SCRIPT under PY until it has printed its
# threads' "TID NAME" lines ($NEED of them, 3 unless set); sets W and OUT
# (its output).
start_names() {
	local i
	OUT="$T/names.$RANDOM"
	nice -n 19 "$1" "$SCRIPT" "${@:2}" >"$OUT" 2>&1 &
	CHILDREN+=($!)
	W=$!
	for i in $(seq 1 300); do # a loaded machine starts Python slowly
		[ "$(grep -cs '^[0-9]* ' "$OUT")" -ge "${NEED:-3}" ] && return 0
		kill -0 "$W" 2>/dev/null || { cat "$OUT" >&2; fail "$1 exited before it was ready"; }
		sleep 0.1
	done
	fail "$1 not ready after 30 s"
}

# check VERSION PID OUT TEXT JSON: every thread the script named is
# listed with its name, in the text and the JSON.
check() {
	python3 - "$@" <<'PY' || fail "python $1: thread names wrong"
import json, re, sys
ver, pid, out, text, js = sys.argv[1:]
want = {}
for line in open(out):
    m = re.fullmatch(r"(\d+) (.+)\n?", line)
    if m:
        want[int(m.group(1))] = m.group(2)
minor = int(ver.split()[0].split(".")[1])
names = sorted(want.values())
assert names[0] == "CustomThreadName-3" and names[1] == "MainThread", names
assert re.fullmatch(r"Thread-\d+ \(worker\)" if minor >= 10 else r"Thread-\d+", names[2]), names
assert want[int(pid)] == "MainThread", want
heads = {}
for line in open(text):
    m = re.match(r'Thread (\d+) "(.*)" ', line)
    if m:
        heads[int(m.group(1))] = m.group(2)
threads = {t["tid"]: t for t in json.load(open(js))}
for tid, name in want.items():
    assert heads.get(tid) == name, ("text", tid, heads.get(tid), name)
    assert threads[tid]["python_name"] == name, ("json", tid, threads[tid], name)
    assert threads[tid]["name"], ("no OS name", threads[tid])
print(", ".join('%d "%s"' % (t, n) for t, n in sorted(want.items())))
PY
}

# roots OUT FOLDED [DEPTH]: the folded dump has a root "NAME (TID)" (at
# DEPTH, 0 the first frame) for every thread OUT names; silent, 1 if not.
roots() {
	python3 - "$@" <<'PY'
import re, sys
out, folded = sys.argv[1:3]
depth = int(sys.argv[3]) if len(sys.argv) > 3 else 0
want = set()
for line in open(out):
    m = re.fullmatch(r"(\d+) (.+)\n?", line)
    if m:
        want.add("%s (%s)" % (m.group(2), m.group(1)))
got = set()
for line in open(folded):
    frames = line.rsplit(" ", 1)[0].split(";")
    if len(frames) > depth:
        got.add(frames[depth])
sys.exit(0 if want <= got else 1)
PY
}

mapfile -t PYS < <(list_pythons)
[ "${#PYS[@]}" -gt 0 ] || skip "no CPython 3.9+ found"
[ "$(id -u)" = 0 ] || skip "needs root to load BPF programs (running as uid $(id -u))"
JOBS=()
VERS=()
OUTS=()
for py in "${PYS[@]}"; do
	start_names "$py"
	JOBS+=("$W")
	OUTS+=("$OUT")
	VERS+=("$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])') ($py)")
done
start_profd
for i in "${!JOBS[@]}"; do
	W=${JOBS[$i]} ver=${VERS[$i]}
	ctl stacks --pid "$W" >"$T/st.txt" 2>"$T/st.err" ||
		{ cat "$T/st.err" >&2; fail "python $ver: stacks failed"; }
	ctl stacks --pid "$W" --json >"$T/st.json" || fail "python $ver: stacks --json failed"
	check "$ver" "$W" "${OUTS[$i]}" "$T/st.txt" "$T/st.json" >"$T/summary"
	ok "python $ver: $(cat "$T/summary")"
done
stop_profd
kill "${JOBS[@]}"

JOBS=()
OUTS=()
for py in "${PYS[@]}"; do
	start_names "$py" spin
	JOBS+=("$W")
	OUTS+=("$OUT")
done
start_profd
for i in "${!JOBS[@]}"; do
	W=${JOBS[$i]} ver=${VERS[$i]}
	for n in $(seq 1 40); do # until each thread has samples (24 of them spin)
		# No samples yet is an error too.
		ctl dump --pid "$W" --by-thread >"$T/d.folded" 2>"$T/d.err" &&
			roots "${OUTS[$i]}" "$T/d.folded" && break
		sleep 0.5
	done
	roots "${OUTS[$i]}" "$T/d.folded" || {
		cut -d';' -f1 "$T/d.folded" | sort | uniq -c >&2
		cat "$T/d.err" "${OUTS[$i]}" >&2
		fail "python $ver: dump --by-thread roots not the Python names"
	}
	ok "python $ver: dump --by-thread: $(cut -d';' -f1 "$T/d.folded" | sort -u | paste -sd,)"
done
# Two processes: each thread's root under its process's.
ctl dump --pid "${JOBS[0]}" --pid "${JOBS[-1]}" --by-thread >"$T/d2.folded" ||
	fail "dump of two failed"
roots "${OUTS[0]}" "$T/d2.folded" 1 && roots "${OUTS[-1]}" "$T/d2.folded" 1 ||
	{ cut -d';' -f1,2 "$T/d2.folded" | sort -u >&2; fail "two processes: thread roots not named"; }
ok "two processes: $(cut -d';' -f1,2 "$T/d2.folded" | sort -u | paste -sd,)"
# Timelines: each thread's track by its Python name, each process by
# its main thread's OS name.
ctl dump --pid "${JOBS[0]}" --pid "${JOBS[-1]}" -f trace -o "$T/t.json" || fail "trace failed"
ctl dump --pid "${JOBS[0]}" --pid "${JOBS[-1]}" -f gecko -o "$T/g.json" || fail "gecko failed"
python3 - "$T/t.json" "$T/g.json" "${OUTS[0]}" "${OUTS[-1]}" <<'PY' >"$T/summary" ||
import json, re, sys
trace, gecko = (json.load(open(f)) for f in sys.argv[1:3])
want = {}
for out in sys.argv[3:]:
    for line in open(out):
        m = re.fullmatch(r"(\d+) (.+)\n?", line)
        if m:
            want[int(m.group(1))] = m.group(2)
ev = trace["traceEvents"] if isinstance(trace, dict) else trace
names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
procs = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
tracks = {t["tid"]: (t["name"], t["processName"]) for t in gecko["threads"]}
for tid, name in want.items():
    assert names.get(tid) == name, ("trace", tid, names.get(tid), name)
    assert tracks[tid][0] == "%s (%d)" % (name, tid), ("gecko", tid, tracks[tid], name)
    assert tracks[tid][1] != "MainThread", ("gecko process", tracks[tid])
assert "MainThread" not in procs.values(), procs
print("trace", sorted(names.values()), "processes", sorted(procs.values()))
PY
	fail "timelines: tracks not named by Python"
ok "timelines: $(cat "$T/summary")"
stop_profd
kill "${JOBS[@]}"

# record --by-thread across a thread's exit: rooted at its Python name at
# the start and at its OS name at the end, it must still be subtracted:
# the window holds less of it than its whole life.
SCRIPT=$SRC/tests/workloads/py_thread_exits.py
start_profd
NEED=1 start_names "${PYS[-1]}" 4
sleep 2
ctl record --pid "$W" --duration 4s --by-thread -f folded -o "$T/r.folded" >/dev/null ||
	fail "record --by-thread failed"
ctl dump --pid "$W" --by-thread >"$T/all.folded" || fail "dump after record failed"
read -r stid _ < <(grep '^[0-9]* ' "$OUT")
in_window=$(sum_matching "$T/r.folded" "^[^;]* [(]$stid[)];")
whole=$(sum_matching "$T/all.folded" "^[^;]* [(]$stid[)];")
[ "$whole" -gt 0 ] && [ "$in_window" -lt "$whole" ] ||
	{ cut -d';' -f1 "$T/r.folded" "$T/all.folded" | sort | uniq -c >&2
	  fail "record --by-thread: thread $stid has $in_window of its $whole samples in the window"; }
ok "record --by-thread: the exited thread $stid: $in_window of its $whole samples in the window"
stop_profd
kill "$W"

SCRIPT=$SRC/tests/workloads/py_subinterp_threads.py
JOBS=()
OUTS=()
SUBVERS=()
for i in "${!PYS[@]}"; do
	py=${PYS[$i]}
	if [ "$("$py" -c 'import sys; print(sys.version_info[1] >= 12)')" != True ]; then
		echo "subinterpreter: ${VERS[$i]} skipped (no threads in subinterpreters before 3.12)"
		continue
	fi
	NEED=2 start_names "$py"
	JOBS+=("$W")
	OUTS+=("$OUT")
	SUBVERS+=("${VERS[$i]}")
done
[ "${#JOBS[@]}" -gt 0 ] || { ok "no CPython 3.12+: no subinterpreter check"; exit 0; }
start_profd
for i in "${!JOBS[@]}"; do
	ctl stacks --pid "${JOBS[$i]}" >"$T/st.txt" || fail "python ${SUBVERS[$i]}: stacks failed"
	while read -r tid name; do
		grep -q "^Thread $tid \"$name\" " "$T/st.txt" ||
			{ cat "$T/st.txt" >&2; fail "python ${SUBVERS[$i]}: thread $tid not named $name"; }
	done < <(grep '^[0-9]* ' "${OUTS[$i]}")
	ok "python ${SUBVERS[$i]}: subinterpreter: $(grep '^[0-9]* ' "${OUTS[$i]}" | paste -sd,)"
done
stop_profd
