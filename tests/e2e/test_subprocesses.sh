# record --subprocesses follows multiprocessing children started by fork,
# forkserver and spawn (tests/workloads/py_subprocs.py), on every
# interpreter pythons.sh lists.  With -t wall on a daemon with --off-cpu,
# the child that sleeps all its life is there with its Python frames: its
# only sample comes as it wakes and exits, so its code objects are named
# from the stack record BPF sent when it blocked (read while it slept),
# or from the fork parent's memory.  Blocks while it starts may stay
# unreadable (code run once and freed before it could be read), and its
# first 0.3 s nap unnamed: a block within ~100 ms of an exec may come
# before profd has the process's unwind tables and interpreter.  The child that burns a CPU is there
# too, and in a CPU recording.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pythons.sh"

SCRIPT=$SRC/tests/workloads/py_subprocs.py
L_NAP=$(line_of 'the napper sleeps here')
SECS=2.5

# wall_of FILE PID RE: seconds of PID's stacks matching RE in a folded
# wall recording (weights in ns).
wall_of() {
	awk -v p="($2)" -v re="$3" '{ n = $NF; $NF = ""; split($0, f, ";")
		if (index(f[1], p) && $0 ~ re) s += n } END { printf "%.2f", s / 1e9 }' "$1"
}
# cpu_of FILE PID RE: samples of PID's stacks matching RE.
cpu_of() {
	awk -v p="($2)" -v re="$3" '{ n = $NF; $NF = ""; split($0, f, ";")
		if (index(f[1], p) && $0 ~ re) s += n } END { print s + 0 }' "$1"
}
at_least() { awk -v x="$1" -v lo="$2" 'BEGIN { exit !(x >= lo) }'; }

# record_tree PY METHOD TYPE: a recording of py_subprocs.py into
# $T/rec.folded, the children's pids in NAPPER and BURNER.
record_tree() {
	rm -f "$T/pids"
	ctl record -t "$3" --subprocesses --duration 60s -f folded -o "$T/rec.folded" -- \
		"$1" "$SCRIPT" "$2" "$SECS" "$T/pids" >"$T/rec.out" 2>&1 ||
		{ cat "$T/rec.out" >&2; fail "$1 $2: record failed"; }
	NAPPER=$(awk '$1 == "napper" { print $2 }' "$T/pids")
	BURNER=$(awk '$1 == "burner" { print $2 }' "$T/pids")
	[ -n "$NAPPER" ] && [ -n "$BURNER" ] || fail "$1 $2: no child pids"
}

start_profd --all-processes --off-cpu
mapfile -t PYTHONS < <(list_pythons)
[ "${#PYTHONS[@]}" -gt 0 ] || skip "no CPython found"
for py in "${PYTHONS[@]}"; do
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	for method in fork forkserver spawn; do
		record_tree "$py" "$method" wall
		nap=$(wall_of "$T/rec.folded" "$NAPPER" "nap \\($SCRIPT:$L_NAP\\)")
		lost=$(wall_of "$T/rec.folded" "$NAPPER" "python frame unreadable")
		burn=$(wall_of "$T/rec.folded" "$BURNER" "burn \\($SCRIPT:")
		at_least "$nap" 2.2 || {
			# The napper's heaviest stacks, how its blocks ended.
			grep -F "($NAPPER)" "$T/rec.folded" | heaviest - 5 | cut -c1-400 >&2
			ctl stats | grep -E '^bpf_offcpu_(blocks_end|thread_state|events_dropped)' >&2
			fail "python $ver $method: the napper $NAPPER has $nap s in nap(), of ${SECS} s asleep"
		}
		# Start-up blocks may name code run once and freed (a module's
		# body) before it could be read (more on a slow machine), but
		# never the nap: no unreadable block as long as a second.
		worst=$(awk -v p="($NAPPER)" 'index($0, p) && /python frame unreadable/ && $NF > m { m = $NF }
			END { printf "%.2f", m / 1e9 }' "$T/rec.folded")
		at_least 1 "$worst" || fail "python $ver $method: a block of $worst s of the napper unreadable"
		at_least "$burn" 1.5 || fail "python $ver $method: the burner $BURNER has $burn s in burn()"
		ok "python $ver $method: wall of the napper in nap() ${nap} s (unreadable ${lost} s, at most ${worst} s at once), burner in burn() ${burn} s"
	done
done

# CPU samples of the burner, whatever the start method (one interpreter).
for method in fork forkserver spawn; do
	record_tree "${PYTHONS[0]}" "$method" cpu
	n=$(cpu_of "$T/rec.folded" "$BURNER" "burn \\($SCRIPT:")
	[ "$n" -ge 100 ] || fail "${PYTHONS[0]} $method: the burner has $n CPU samples in burn()"
	ok "${PYTHONS[0]} $method: the burner's $n CPU samples in burn()"
done
stop_profd
