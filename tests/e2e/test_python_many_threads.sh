# 1000 threads of one Python process each get their Python frames, the
# half started after profd as well as the half started before it (the
# oldest threads, the main one included, sit at the tail of the
# interpreter's thread list).  A relay runs the threads one at a time,
# each for a slice of its own CPU time, so every thread is sampled.  Run
# for the first interpreter that records kernel tids (3.11+) and the first
# that does not (3.9, 3.10: matched by pthread id).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pythons.sh"

N=1000
SLICE=0.015 # CPU seconds per thread: ~15 samples at 999 Hz
SCRIPT=$SRC/tests/workloads/py_many_threads.py

mapfile -t PYTHONS < <(list_pythons)
[ "${#PYTHONS[@]}" -gt 0 ] || fail "no CPython found (Debian's python3 is a dependency)"
declare -A picked=()
for py in "${PYTHONS[@]}"; do
	kind=$("$py" -c 'import sys; print("native_id" if sys.version_info >= (3, 11) else "pthread")')
	[ -n "${picked[$kind]:-}" ] || picked[$kind]=$py
done

for kind in "${!picked[@]}"; do
	py=${picked[$kind]}
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	rm -f "$T/go"
	"$py" "$SCRIPT" "$N" "$T/go" "$SLICE" >"$T/out" &
	W=$!
	CHILDREN+=($W)
	for i in $(seq 1 600); do # a busy machine starts 500 threads slowly
		grep -q ready "$T/out" && break
		kill -0 "$W" 2>/dev/null || fail "python $ver: the workload exited early"
		sleep 0.1
	done
	grep -q ready "$T/out" || fail "python $ver: the first $((N / 2)) threads did not start within 60 s"
	start_profd --rate 999
	touch "$T/go" # the second half starts now, under profd
	wait "$W" || fail "python $ver: the workload failed"
	ctl dump --pid "$W" --by-thread --python-only -o "$T/threads.folded" || fail "python $ver: dump failed"
	ctl stats >"$T/stats"
	stop_profd
	# One root per thread ("comm (tid)"), with the chain relay -> work.
	n=$(grep -E ';relay \([^;]*\);work \(' "$T/threads.folded" | cut -d';' -f1 | sort -u | grep -c .)
	total=$(total_samples "$T/threads.folded")
	chain=$(sum_matching "$T/threads.folded" ';relay \([^;]*\);work \(')
	searches=$(awk '$1 == "bpf_python_thread_list_searches" { print $2 }' "$T/stats")
	echo "python $ver ($kind): $n of $N threads with relay;work, $chain of $total samples; $searches thread-list searches"
	[ "$n" -ge "$N" ] || fail "python $ver: only $n of $N threads have Python frames"
	ok "python $ver: $N threads, each with its Python frames"
done
