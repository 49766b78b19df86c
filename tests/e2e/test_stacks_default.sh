# profctl stacks on a daemon left at its defaults (no --off-cpu), for the
# moment people reach for py-spy dump: a Python job that hung before profd
# started (tests/workloads/py_hang.py), on every interpreter pythons.sh
# lists.  Every thread is listed; the main thread blocked in hang() and
# the napper blocked in time.sleep show their Python frames, read from
# the process's memory on request, in order and with their lines; the
# spinner shows where it computes.  The same in a container's pid
# namespace (thread ids as the namespace numbers them, both through
# native_thread_id and through struct pthread).  Then with --off-cpu: the
# threads BPF never saw still get the stacks read now.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pythons.sh"

SCRIPT=$SRC/tests/workloads/py_hang.py
L_NAP=$(line_of 'the napper blocks here')
L_SPIN=$(line_of 'the spinner runs here')
L_HANG=$(line_of 'the main thread blocks here')
L_MAIN=$(line_of 'hang()  # called from main')
L_MOD=$(line_of 'main()  # called from <module>')

INNER=()
trap 'kill -KILL "${INNER[@]}" 2>/dev/null; cleanup' EXIT

# start_in_container PY ARGS...: start_ready under new pid and mount
# namespaces; W is the interpreter's pid as the host sees it.
start_in_container() {
	local u
	start_ready unshare --pid --fork --mount-proc --kill-child "$@"
	u=$W
	W=$(pgrep -P "$u" | head -1)
	[ -n "$W" ] || fail "no process inside the namespace of $u"
	# unshare --fork ignores SIGTERM while it waits, and the job, the
	# namespace's pid 1, ignores every signal but SIGKILL from outside:
	# killed that way on the way out, or it spins on after the test.
	INNER+=("$W")
}

# check_json VERSION PID FILE [offcpu]: the JSON listing of a py_hang.py;
# what it found in $T/summary.
check_json() {
	python3 - "$3" "$SCRIPT" "$2" "$L_HANG $L_MAIN $L_MOD $L_NAP $L_SPIN" \
		"$(ls /proc/"$2"/task | tr '\n' ' ')" "${4:-}" >"$T/summary" <<'PY' || fail "python $1: JSON listing wrong"
import json, sys
threads = json.load(open(sys.argv[1]))
script, pid = sys.argv[2], int(sys.argv[3])
l_hang, l_main, l_mod, l_nap, l_spin = map(int, sys.argv[4].split())
tids = sorted(int(t) for t in sys.argv[5].split())
offcpu = sys.argv[6] == "offcpu"

def py(t):
    return [f["name"] for f in t["frames"] if f["kind"] == "python"]

def at(name, line):
    return "%s (%s:%d)" % (name, script, line)

got = sorted(t["tid"] for t in threads)
assert got == tids, ("threads listed", got, "in /proc", tids)
main = next(t for t in threads if t["tid"] == pid)
assert main["stack_from"] == "read-now", main
assert main["state"] in "SD", main
assert py(main)[-3:] == [at("hang", l_hang), at("main", l_main), at("<module>", l_mod)], py(main)
# co_name before 3.11: "wait"; co_qualname after: "Condition.wait".
assert py(main)[0].split(" (")[0] in ("wait", "Condition.wait"), py(main)
nap = [t for t in threads if py(t)[:1] == [at("nap", l_nap)]]
assert len(nap) == 1, [py(t) for t in threads]
assert nap[0]["stack_from"] == "read-now" and nap[0]["state"] in "SD", nap[0]
assert py(nap[0])[-1].split(" (")[0] in ("_bootstrap", "Thread._bootstrap"), py(nap[0])
# A running thread is read wherever it is in its loop: the while line
# or the one under it.
spin = [t for t in threads
        if any(f in (at("spin", l_spin - 1), at("spin", l_spin)) for f in py(t))]
assert len(spin) == 1, [(t["stack_from"], t["source"], [f["kind"] + ":" + f["name"] for f in t["frames"]])
                         for t in threads if not any(f in py(t) for f in (at("hang", l_hang), at("nap", l_nap)))]
if offcpu:  # seen by BPF by now: its latest CPU sample (or a preemption)
    assert spin[0]["stack_from"] in ("cpu-sample", "switch-out", "read-now"), spin[0]
else:
    assert spin[0]["stack_from"] == "read-now", spin[0]
print("main:", " <- ".join(py(main)[-3:]), "| napper:", py(nap[0])[0],
      "| spinner:", spin[0]["source"])
PY
}

# check_text VERSION PID FILE: the text listing names the main thread and
# its Python frames hang <- main <- <module>, leaf first (the native frames
# between eval calls left out: tests/e2e/test_stacks_native.sh).
check_text() {
	awk -v h="Thread $2 " 'index($0, h) == 1 { on = 1; print; next } /^$/ { on = 0 } on' "$3" |
		sed 's/^ *//' >"$T/main.txt"
	head -1 "$T/main.txt" | grep -q "(blocked: Python stack read now)" ||
		{ cat "$3" >&2; fail "python $1: main thread not listed as read now"; }
	grep -E ' \(.*:[0-9]+\)$' "$T/main.txt" | grep -A2 -x "hang ($SCRIPT:$L_HANG)" | tr '\n' '|' |
		grep -qx "hang ($SCRIPT:$L_HANG)|main ($SCRIPT:$L_MAIN)|<module> ($SCRIPT:$L_MOD)|" ||
		{ cat "$T/main.txt" >&2; fail "python $1: main thread's frames not hang <- main <- <module>"; }
}

mapfile -t PYS < <(list_pythons)
[ "${#PYS[@]}" -gt 0 ] || skip "no CPython 3.9+ found"
[ "$(id -u)" = 0 ] || skip "needs root to load BPF programs (running as uid $(id -u))"
# Every job starts, and blocks, before profd does.
JOBS=()
VERS=()
for py in "${PYS[@]}"; do
	start_ready nice -n 19 "$py" "$SCRIPT" # 9 spinners on a shared machine
	JOBS+=("$W")
	VERS+=("$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])') ($py)")
done
# In a container: a 3.9 or 3.10 (the tid through pthread_t), where there
# is one, and the last listed (3.11+: native_thread_id).
OLD=${PYS[0]}
for py in "${PYS[@]}"; do
	[ "$("$py" -c 'import sys; print(sys.version_info[1] < 11)')" = True ] && { OLD=$py; break; }
done
if command -v unshare >/dev/null && unshare --pid --fork --mount-proc true 2>/dev/null; then
	for py in "$OLD" "${PYS[-1]}"; do
		start_in_container nice -n 19 "$py" "$SCRIPT"
		JOBS+=("$W")
		VERS+=("$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])') in a container")
	done
else
	echo "no container check: this machine refuses new pid/mount namespaces"
fi
start_profd
for i in "${!JOBS[@]}"; do
	W=${JOBS[$i]} ver=${VERS[$i]}
	ctl stacks --pid "$W" >"$T/st.txt" 2>"$T/st.err" ||
		{ cat "$T/st.err" >&2; fail "python $ver: stacks failed"; }
	check_text "$ver" "$W" "$T/st.txt"
	ctl stacks --pid "$W" --json >"$T/st.json" || fail "python $ver: stacks --json failed"
	check_json "$ver" "$W" "$T/st.json"
	ok "python $ver: $(cat "$T/summary")"
done
# A process that is not Python: listed, its blocked threads with their
# native stacks read now (tests/e2e/test_stacks_native.sh checks them).
ctl stacks --pid "$PROFD_PID" >"$T/profd.txt" || fail "stacks of profd itself failed"
grep -q "(blocked: native stack read now)" "$T/profd.txt" ||
	{ cat "$T/profd.txt" >&2; fail "a native process's blocked threads have no native stack"; }
ok "a native process: $(grep -c '^Thread ' "$T/profd.txt") threads listed, native stacks read"
stop_profd

# With --off-cpu the threads blocked since before profd have no
# switch-out: their stacks are read now all the same.
start_profd --off-cpu
sleep 1
for i in "${!JOBS[@]}"; do
	W=${JOBS[$i]} ver=${VERS[$i]}
	ctl stacks --pid "$W" --json >"$T/st.json" || fail "python $ver: stacks --json failed with --off-cpu"
	check_json "$ver" "$W" "$T/st.json" offcpu
	ok "python $ver, --off-cpu: $(cat "$T/summary")"
done
stop_profd
