# Several threads, multiprocessing workers and a C function between
# Python frames, for every CPython on the machine (Debian's python3.11
# always; others where present).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pythons.sh"

mapfile -t PYTHONS < <(list_pythons)
[ "${#PYTHONS[@]}" -gt 0 ] || fail "no CPython found (Debian's python3 is a dependency)"
# 1 s buckets: the C-frames check reads the last seconds only (below).
start_profd --rate 499 --bucket 1s
for PY in "${PYTHONS[@]}"; do
	ver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	# The three workloads run side by side, each check reading its own
	# process: one 4 s window for all of them, not one each (14 s an
	# interpreter before, 114 s for eight).  On two CPUs each still gets
	# hundreds of samples at 499 Hz; the checks are shares, not counts.
	run_bg "$PY" "$SRC/tests/workloads/py_split.py" 6 3
	W=${CHILDREN[-1]}
	"$PY" "$SRC/tests/workloads/py_mp.py" 5 >"$T/mp.pids" &
	MP=$!
	CHILDREN+=($MP)
	# Wait for both workers to report (pool start-up is slow on a busy host).
	for i in $(seq 1 50); do
		[ "$(grep -c '^[0-9]' "$T/mp.pids")" -ge 2 ] && break
		sleep 0.1
	done
	run_bg "$PY" "$SRC/tests/workloads/py_sorted.py" 8
	S=${CHILDREN[-1]}
	sleep 4

	# Threads: --by-thread puts a root per thread, each with the chain.
	ctl dump --pid "$W" --by-thread --python-only -o "$T/threads.folded" || fail "python $ver: dump --by-thread failed"
	threads=$(grep -E ';main \(.*;mid \(.*;leaf_(heavy|light) \(' "$T/threads.folded" | cut -d';' -f1 | sort -u)
	echo "$threads"
	n=$(echo "$threads" | grep -c .)
	[ "$n" -ge 3 ] || fail "python $ver: expected 3 threads with the chain, got $n"
	# CPython < 3.14 leaves OS thread names alone: roots are "comm (tid)".
	echo "$threads" | grep -qE '^[^;]+ \([0-9]+\)$' || fail "python $ver: thread roots are not 'name (tid)'"
	grep -q 'Thread._bootstrap\|_bootstrap (' "$T/threads.folded" || fail "python $ver: worker threads lack threading frames"
	ok "python $ver: $n threads, each with its own root and full chain"

	# Multiprocessing: each worker process has its own profile with the chain.
	mapfile -t WORKERS < <(grep '^[0-9]' "$T/mp.pids" | sort -u)
	[ "${#WORKERS[@]}" = 2 ] || fail "python $ver: expected 2 worker pids, got ${#WORKERS[@]}"
	for w in "${WORKERS[@]}"; do
		ctl dump --pid "$w" --python-only -o "$T/w$w.folded" || fail "python $ver: worker $w: dump failed"
		grep -qE '^<module> \(.*py_mp.py:[0-9]+\);main \(.*;work \(.*py_mp.py:[0-9]+\);burn \(.*py_mp.py:[0-9]+\) [0-9]+$' "$T/w$w.folded" ||
			fail "python $ver: worker $w lacks <module>;main;...;work;burn: $(heaviest "$T/w$w.folded" 2)"
		# Forked, not exec'ed: Python frames from its first sample (BPF
		# and the process table take the parent's state at the fork).
		total=$(total_samples "$T/w$w.folded")
		burning=$(sum_matching "$T/w$w.folded" ';work \([^;]*\);burn \(')
		echo "python $ver: worker $w: $burning of $total samples in work;burn"
		[ $((burning * 100)) -ge $((total * 90)) ] ||
			fail "python $ver: worker $w: only $burning of $total samples have its chain: $(heaviest "$T/w$w.folded" 2)"
	done
	ok "python $ver: multiprocessing workers ${WORKERS[*]} profiled with their chain from the start"

	# C frames between Python frames: sorted() calls slow_key from C.
	# The last 2 s (whole buckets: up to 3) of its 4: the native frames
	# between need the interpreter's unwind tables, which its first
	# process waits for (a fraction of a second; seconds on a loaded
	# machine, where 41 of 310 samples came before them).
	ctl dump --pid "$S" --since 2s -o "$T/sorted.folded" || fail "python $ver: sorted dump failed"
	keyed=$(sum_matching "$T/sorted.folded" ';slow_key \(')
	between=$(sum_matching "$T/sorted.folded" ';sort_them \([^;]*\)(;[^;(]+)+;slow_key \(')
	echo "python $ver: sorted(): $between of $keyed samples in slow_key show native frames between sort_them and slow_key"
	[ "$keyed" -gt 50 ] || fail "python $ver: too few samples in slow_key"
	[ $((between * 100)) -ge $((keyed * 90)) ] || { grep slow_key "$T/sorted.folded" | heaviest - 2 >&2; fail "python $ver: C frames do not show between the Python frames"; }
	ok "python $ver: C extension frames between Python frames"
	kill "$W" "$S" 2>/dev/null; wait "$W" "$S" 2>/dev/null

	# An exited worker stays queryable: the pool is gone once py_mp exits.
	wait "$MP"
	kill -0 "${WORKERS[0]}" 2>/dev/null && fail "python $ver: worker ${WORKERS[0]} outlived its pool"
	sleep 0.5 # its exit event reaches profd
	ctl dump --pid "${WORKERS[0]}" -o /dev/null || fail "python $ver: exited worker not queryable"
	ok "python $ver: exited worker still queryable"
done

# A job a shell started: between its fork and its exec the process ran
# the shell (here a loop of it, for samples), under the shell's name.
# --by-thread shows that part as such, the Python view leaves it out.
PY=${PYTHONS[0]}
run_bg bash -c 'for ((i = 0; i < 100000; i++)); do :; done; exec "$0" "$1" 6 3' "$PY" \
	"$SRC/tests/workloads/py_split.py"
J=${CHILDREN[-1]}
sleep 3
ctl dump --pid "$J" --by-thread -o "$T/job.folded" || fail "dump of the shell-started job failed"
pre=$(sum_matching "$T/job.folded" "^bash, before exec \($J\);")
echo "a job a shell started: $pre of $(total_samples "$T/job.folded") samples under 'bash, before exec ($J)'"
[ "$pre" -gt 0 ] || fail "no 'bash, before exec ($J)' root: $(cut -d';' -f1 "$T/job.folded" | sort | uniq -c)"
grep -q "^bash ($J);" "$T/job.folded" && fail "the shell's part of $J is still under 'bash ($J)'"
for type in cpu wall; do
	ctl dump --pid "$J" --by-thread --python-only --type "$type" -o "$T/jobpy.folded" ||
		fail "--python-only --type $type dump of the job failed"
	grep -q "^bash" "$T/jobpy.folded" && fail "--python-only --type $type shows the shell: $(grep '^bash' "$T/jobpy.folded" | head -2)"
	grep -q ';main (.*;mid (.*;leaf_heavy (' "$T/jobpy.folded" || fail "--python-only --type $type lacks the job's chain"
done
ok "a job a shell started: its shell part is 'bash, before exec', not in the Python view"
kill "$J"; wait "$J" 2>/dev/null
stop_profd
