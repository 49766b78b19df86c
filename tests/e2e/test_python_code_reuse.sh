# A code object freed and its address taken by another must not lend it
# its name (tests/workloads/py_code_reuse.py): work_a (first_file.py)
# runs, is freed, work_b (second_file.py) gets its address and runs.  The
# samples taken while work_b runs are named work_b (second_file.py); none
# is named after first_file.py.  A's samples are counted when the
# workload says B is about to start, so any first_file.py sample after
# that is a wrong name.  Both phases run within one period of the names'
# re-check (2^INGEST_PY_RECHECK_SHIFT ns of the monotonic clock), which
# would otherwise hide a stale name now and then.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pythons.sh"

SCRIPT=$SRC/tests/workloads/py_code_reuse.py
SECONDS_PER_PHASE=1.2
RECHECK_PERIOD_NS=$((1 << 32))
A_RE=';work_a \(first_file\.py:[0-9]+\)'
B_RE=';work_b \(second_file\.py:[0-9]+\)'
MIXED_RE='work_a \(second_file\.py|work_b \(first_file\.py'

# wait_line FILE WORD: until the workload printed WORD (at most 15 s).
wait_line() {
	local i
	for i in $(seq 1 300); do
		grep -qx "$2" "$1" && return 0
		sleep 0.05
	done
	return 1
}

mapfile -t PYTHONS < <(list_pythons)
[ "${#PYTHONS[@]}" -gt 0 ] || fail "no CPython found (Debian's python3 is a dependency)"
start_profd --rate 999
tested=0
for py in "${PYTHONS[@]}"; do
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	out=$T/out.$ver
	run_bg "$py" "$SCRIPT" "$SECONDS_PER_PHASE" "$RECHECK_PERIOD_NS" >"$out"
	W=${CHILDREN[-1]}
	wait_line "$out" REUSED || wait_line "$out" NOT_REUSED || fail "python $ver: the workload did not get past phase A"
	if grep -qx NOT_REUSED "$out"; then
		echo "python $ver: work_a's address was not had again in the workload's tries: not tested"
		kill "$W"; wait "$W" 2>/dev/null
		continue
	fi
	wait_line "$out" PHASE_B || fail "python $ver: no PHASE_B"
	ctl dump --pid "$W" --python-only -o "$T/a.folded" || fail "python $ver: dump failed"
	wait_line "$out" DONE || fail "python $ver: phase B did not end"
	ctl dump --pid "$W" --python-only -o "$T/ab.folded" || fail "python $ver: dump failed"
	kill "$W"; wait "$W" 2>/dev/null

	a=$(sum_matching "$T/a.folded" "$A_RE")
	a_all=$(sum_matching "$T/ab.folded" "$A_RE")
	b=$(sum_matching "$T/ab.folded" "$B_RE")
	mixed=$(sum_matching "$T/ab.folded" "$MIXED_RE")
	wrong=$((a_all - a))
	echo "python $ver: phase A: $a samples in work_a (first_file.py); phase B: $b in work_b (second_file.py), $wrong more named work_a (first_file.py), $mixed with one's name and the other's file"
	[ "$a" -ge 50 ] || fail "python $ver: only $a samples of work_a"
	[ "$wrong" -le 5 ] || {
		grep -E "$A_RE" "$T/ab.folded" | head -3 | cut -c1-300 >&2
		fail "python $ver: $wrong samples taken while work_b ran were named after the freed work_a"
	}
	[ "$mixed" = 0 ] || fail "python $ver: $mixed samples mix the two code objects' names"
	[ "$b" -ge 50 ] || fail "python $ver: only $b samples named work_b (second_file.py)"
	ok "python $ver: a reused code object address gets its own name"
	tested=$((tested + 1))
done
stop_profd
[ "$tested" -gt 0 ] || skip "no interpreter reused the freed code object's address"
