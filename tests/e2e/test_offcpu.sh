# Off-CPU and wall-clock profiles, GIL waits and `profctl stacks`, on real
# CPython: tests/workloads/py_wall.py computes in one function and sleeps
# in another for equal time while a second thread blocks forever on a lock.
#  - wall: compute and sleep_for split as they really did, within 5
#    points (50/50 on a quiet machine; the workload writes down the truth,
#    since under load a compute step overshoots its deadline);
#  - cpu: sleep_for under 5%;
#  - off-cpu: sleep_for with the kernel's sleep in its leaf frames, and the
#    thread blocked forever (a block still under way counts up to the dump);
#  - stacks: the blocked thread with its Python frame, state and wait;
#  - with threads contending for the GIL: "[GIL wait]" stacks (where the
#    interpreter has take_gil's symbol);
#  - --type gil: the GIL holder's samples kept, hashing without it dropped
#    (also for Debian sid's 3.14 and 3.15 where they can be fetched).
# Debian's python3.11 and the newest pyenv CPython (3.11+) if present, or
# $PROFD_TEST_PYTHONS.
. "$(dirname "$0")/lib.sh"

pythons() {
	if [ -n "${PROFD_TEST_PYTHONS:-}" ]; then
		echo "$PROFD_TEST_PYTHONS" | tr ':' '\n'
		return
	fi
	[ -x /usr/bin/python3.11 ] && echo /usr/bin/python3.11
	local root p
	if command -v pyenv >/dev/null 2>&1 && root=$(pyenv root 2>/dev/null); then
		for p in $(ls -d "$root"/versions/3.1[1-9]* 2>/dev/null | sort -V | tail -1); do
			[ -x "$p/bin/python3" ] && echo "$p/bin/python3"
		done
	fi
}

# has_take_gil PY: PY's symbols name take_gil (or a clone, take_gil.lto_priv.0),
# or those of its debug file by build-id (Debian's python3.11-dbg has
# /usr/bin/python3.11's), which profd reads.
has_take_gil() {
	local id dbg
	id=$(readelf -n "$1" 2>/dev/null | awk '/Build ID/ { print $3 }')
	dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
	{ nm "$1"; [ -n "$id" ] && [ -f "$dbg" ] && nm "$dbg"; } 2>/dev/null | grep -qE ' take_gil(\.|$)'
}

# sum_ns FILE REGEX: as sum_matching, for weights in ns (printed whole).
sum_ns() { awk -v re="$2" '{ n = $NF; $NF = ""; if ($0 ~ re) s += n } END { printf "%.0f\n", s }' "$1"; }

# share FILE RE_A RE_B: percentage of A in A+B (weights are the last field).
share() {
	local a b
	a=$(sum_ns "$1" "$2")
	b=$(sum_ns "$1" "$3")
	[ "$((a + b))" -gt 0 ] || { echo -1; return; }
	echo $((a * 1000 / (a + b)))
}

# check_gil_type PY VER: --type gil keeps only samples of the thread
# holding the GIL.  hashlib hashes big buffers with the GIL released.
check_gil_type() {
	local PY=$1 ver=$2 H c_h c_s g_h g_s
	run_bg "$PY" "$SRC/tests/workloads/py_gil.py"
	H=${CHILDREN[-1]}
	sleep 5
	ctl dump --pid "$H" --type cpu -o "$T/gcpu.folded" || fail "python $ver: cpu dump failed"
	ctl dump --pid "$H" --type gil -o "$T/ggil.folded" || fail "python $ver: gil dump failed"
	kill "$H"; wait "$H" 2>/dev/null
	c_h=$(sum_ns "$T/gcpu.folded" ';hasher \('); c_s=$(sum_ns "$T/gcpu.folded" ';spin \(')
	g_h=$(sum_ns "$T/ggil.folded" ';hasher \('); g_s=$(sum_ns "$T/ggil.folded" ';spin \(')
	echo "python $ver: cpu: hasher $c_h, spin $c_s samples; gil: hasher $g_h, spin $g_s"
	[ "$c_h" -ge 10 ] && [ "$c_s" -ge 100 ] || fail "python $ver: too few samples for the gil check"
	[ $((g_s * 10)) -ge $((c_s * 9)) ] || fail "python $ver: gil profile lost the GIL holder's samples"
	[ $((g_h * 10)) -le $((c_h * 3)) ] || fail "python $ver: gil profile kept hashing done without the GIL"
	ok "python $ver: --type gil keeps the GIL holder's samples, drops work done without it"
}

mapfile -t PYTHONS < <(pythons)
[ "${#PYTHONS[@]}" -gt 0 ] || fail "no CPython found"
start_profd --off-cpu
SCRIPT=$SRC/tests/workloads/py_wall.py
for PY in "${PYTHONS[@]}"; do
	ver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	run_bg "$PY" "$SCRIPT" --truth "$T/truth"
	W=${CHILDREN[-1]}
	sleep 8
	for t in cpu off-cpu wall; do
		ctl dump --pid "$W" --type "$t" -o "$T/$t.folded" || fail "python $ver: dump --type $t failed"
	done
	ctl dump --pid "$W" --type wall --python-only -o "$T/wall-py.folded" || fail "python $ver: python-only wall dump failed"

	w=$(share "$T/wall.folded" ';compute \(' ';sleep_for \(')
	truth=$(awk '{ printf "%d\n", 1000 * $1 / ($1 + $2) }' "$T/truth")
	echo "python $ver: wall: compute $((w / 10)).$((w % 10))% of compute + sleep_for (really $((truth / 10)).$((truth % 10))%)"
	if [ "$w" -lt $((truth - 50)) ] || [ "$w" -gt $((truth + 50)) ]; then
		ctl stats | grep -E 'offcpu' >&2
		heaviest "$T/wall-py.folded" 6 | cut -c1-300 >&2
		fail "python $ver: wall split $w/1000, really $truth/1000 (+- 50 allowed)"
	fi
	ok "python $ver: wall profile splits compute/sleep as they ran within 5 points"

	total=$(total_samples "$T/cpu.folded")
	slept=$(sum_matching "$T/cpu.folded" ';sleep_for \(')
	echo "python $ver: cpu: sleep_for $slept of $total samples"
	[ "$total" -gt 50 ] || fail "python $ver: too few CPU samples ($total)"
	[ $((slept * 100)) -lt $((total * 5)) ] || fail "python $ver: sleep_for is $slept of $total CPU samples"
	ok "python $ver: cpu profile shows the sleep under 5%"

	sleep_ns=$(sum_ns "$T/off-cpu.folded" ';sleep_for \(.*;(do_nanosleep|hrtimer_nanosleep)_\[k\]')
	echo "python $ver: off-cpu: $((sleep_ns / 1000000)) ms in sleep_for ending in the kernel's nanosleep"
	[ "$sleep_ns" -gt 2000000000 ] || { heaviest "$T/off-cpu.folded" | cut -c1-600 >&2; fail "python $ver: off-cpu lacks sleep_for;...;do_nanosleep"; }
	ok "python $ver: off-cpu profile shows the sleep with do_nanosleep in its leaf frames"

	blocked_ns=$(sum_ns "$T/off-cpu.folded" ';wait_forever \(.*;futex')
	echo "python $ver: off-cpu: $((blocked_ns / 1000000)) ms blocked in wait_forever"
	[ "$blocked_ns" -gt 3000000000 ] || { ctl stacks --pid "$W" >&2; grep wait_forever "$T/off-cpu.folded" | cut -c1-300 >&2; fail "python $ver: the thread blocked forever is not in the off-cpu profile"; }
	ok "python $ver: a thread blocked forever shows in the off-cpu profile up to now"

	ctl stacks --pid "$W" >"$T/stacks.txt" || fail "python $ver: stacks failed"
	ctl stacks --pid "$W" --json >"$T/stacks.json" || fail "python $ver: stacks --json failed"
	"$PY" - "$T/stacks.json" <<'PYEOF' || { cat "$T/stacks.txt" >&2; fail "python $ver: stacks --json lacks the blocked thread"; }
import json, sys
threads = json.load(open(sys.argv[1]))
assert len(threads) == 2, threads
blocked = [t for t in threads if any(f["name"].startswith("wait_forever (") for f in t["frames"])]
assert len(blocked) == 1, "no thread in wait_forever"
t = blocked[0]
assert t["state"] == "S" and t["wait"], t
assert t["source"].startswith("blocked"), t
assert t["age_ns"] > 3e9, t
assert t["frames"][0]["kind"] == "kernel", t["frames"][0]
# The BPF program keeps a thread's last switch-out until something
# settles that block, also once the thread is back: a sleeping thread
# must show its switch-out, a running one its sample (or, preempted, the
# switch-out it is waiting in).
for u in threads:
    if u["state"] == "S":
        assert u["source"].startswith("blocked"), u
    elif u["state"] == "R":
        assert u["source"].startswith(("running", "waiting for a CPU", "woken", "no stack")), u
print("stacks: thread %d %s, waiting in %s, %.1f s" % (t["tid"], t["state_name"], t["wait"], t["age_ns"] / 1e9))
PYEOF
	grep -q '^Thread [0-9]* ".*" sleeping, waiting in ' "$T/stacks.txt" || fail "python $ver: stacks text lacks a thread header"
	ok "python $ver: stacks lists the blocked thread with its Python frame, state and wait"
	kill "$W"; wait "$W" 2>/dev/null

	# Threads contending for the GIL.
	run_bg "$PY" "$SCRIPT" --gil 4
	G=${CHILDREN[-1]}
	sleep 5
	ctl dump --pid "$G" --type off-cpu --python-only -o "$T/gil.folded" || fail "python $ver: gil dump failed"
	gil=$(sum_ns "$T/gil.folded" ';gil_worker \([^;]*\);\[GIL wait\]')
	if [ "$gil" -gt 0 ]; then
		echo "python $ver: $((gil / 1000000)) ms of GIL waits under gil_worker"
		ok "python $ver: threads contending for the GIL show [GIL wait]"
	elif ! has_take_gil "$PY" && ! grep -q 'libpython' <(ldd "$PY" 2>/dev/null); then
		echo "python $ver: not checked: this interpreter has no take_gil symbol (stripped, and no debug file: python3.11-dbg)"
	else
		heaviest "$T/gil.folded" >&2
		fail "python $ver: no [GIL wait] under gil_worker"
	fi
	kill "$G"; wait "$G" 2>/dev/null

	check_gil_type "$PY" "$ver"
done
# The GIL of 3.14 and 3.15 (offsets from the process's _Py_DebugOffsets).
if [ -z "${PROFD_TEST_PYTHONS:-}" ]; then
	mapfile -t SID < <("$SRC/tests/e2e/get_debian_pythons.sh" "$BUILD/debian-pythons" 14 15)
	[ "${#SID[@]}" -gt 0 ] || echo "SKIP: sid's CPython 3.14/3.15 (reason above): --type gil not checked there"
	for PY in "${SID[@]}"; do
		check_gil_type "$PY" "$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
	done
fi
ctl stacks --pid 999999 2>"$T/nopid.err" && fail "stacks of a missing process succeeded"
grep -q 'no such process' "$T/nopid.err" || fail "stacks of a missing process: $(cat "$T/nopid.err")"
ok "stacks of a missing process says so"
ctl stats | grep -E 'offcpu' || true
stop_profd
