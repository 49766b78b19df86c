# profctl dump --by-task: each asyncio task's samples under a frame of its
# own, for real CPython 3.14 and 3.15 processes (Debian sid's builds).
# tests/workloads/py_async_cpu.py runs a task "hasher" in hash_work, a task
# "sorter" in sort_work and two unnamed tasks in unnamed_work, on one
# thread, yielding to the loop between slices: only the task read at
# sample time tells them apart.  The program imports asyncio 1.5 s after
# it starts, so profd has found the interpreter before _asyncio is loaded
# (3.14: it must notice it arrive).  Without --by-task no task frame.
. "$(dirname "$0")/lib.sh"

mapfile -t SID < <("$SRC/tests/e2e/get_debian_pythons.sh" "$BUILD/debian-pythons" 14 15)
[ "${#SID[@]}" -gt 0 ] || skip "sid's CPython 3.14/3.15 not available (reason above): asyncio tasks need 3.14+"
start_profd --rate 199

# share FUNC TASKFRAME FILE: percent of FUNC's samples under TASKFRAME.
share() {
	awk -v f="$1 (" -v t="$2" 'index($0, f) { n = $NF; all += n; if (index($0, t ";") == 1) in_t += n }
		END { print all ? int(100 * in_t / all) : -1, all + 0 }' "$3"
}

for py in "${SID[@]}"; do
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	"$py" "$SRC/tests/workloads/py_async_cpu.py" 6 1.5 >/dev/null &
	W=$!
	CHILDREN+=("$W")
	wait "$W" # the delay before asyncio, then 6 s of tasks
	sleep 0.5 # the last samples come in
	ctl dump --pid "$W" --by-task -o "$T/task.folded" || fail "python $ver: dump --by-task failed"
	ctl dump --pid "$W" -o "$T/plain.folded" || fail "python $ver: dump failed"
	for pair in "hash_work:[task hasher]" "sort_work:[task sorter]" "unnamed_work:[unnamed task]"; do
		fn=${pair%%:*} frame=${pair#*:}
		read -r pct n < <(share "$fn" "$frame" "$T/task.folded")
		[ "$n" -ge 20 ] || fail "python $ver: only $n samples in $fn"
		[ "$pct" -ge 95 ] || {
			grep "$fn (" "$T/task.folded" | head -3 >&2
			fail "python $ver: $pct% of $fn's $n samples under $frame"
		}
		ok "python $ver: $fn: $pct% of its $n samples under $frame"
	done
	! grep -q '\[task \|\[unnamed task\]' "$T/plain.folded" || fail "python $ver: task frames without --by-task"
	[ "$(total_samples "$T/plain.folded")" = "$(total_samples "$T/task.folded")" ] ||
		fail "python $ver: --by-task changed the sample count"
	ok "python $ver: without --by-task no task frame, the same $(total_samples "$T/plain.folded") samples"
done
stop_profd
