# Off-CPU stacks of threads that block the moment they start: each of 300
# such threads is listed by `profctl stacks` with its Python frame
# (wait_forever), not with the native frames alone.  A thread's state is
# bound to it a moment after it starts; BPF used to remember "no Python
# thread state" for 20 ms from a look in that moment, and the block that
# followed lost its Python frames (1-2 threads of 300 in every run).
. "$(dirname "$0")/lib.sh"

PY=$(command -v python3) || fail "python3 missing (a dependency)"
N=300
start_profd --off-cpu
"$PY" "$SRC/tests/workloads/py_block_threads.py" "$N" >"$T/out" 2>&1 &
W=$!
CHILDREN+=($W)
for i in $(seq 1 100); do
	grep -q started "$T/out" && break
	kill -0 "$W" 2>/dev/null || fail "the workload exited: $(cat "$T/out")"
	sleep 0.1
done
grep -q started "$T/out" || fail "the workload did not start its threads"
sleep 1
ctl stacks --pid "$W" >"$T/stacks.txt" || fail "stacks failed"
# Per blocked thread with a stack through the lock's acquire: is its
# Python frame there?
read -r native python < <(awk '
	/^Thread / { if (lock) { n++; if (py) p++ } lock = 0; py = 0; next }
	/lock_PyThread_acquire_lock/ { lock = 1 }
	/^ +wait_forever \(/ { py = 1 }
	END { if (lock) { n++; if (py) p++ } print n + 0, p + 0 }' "$T/stacks.txt")
echo "threads blocked in the lock: $native; with their Python frame: $python (of $N started)"
[ "$native" -ge $((N * 9 / 10)) ] || fail "only $native of $N blocked threads have a stack"
[ "$python" = "$native" ] || {
	awk '/^Thread /{ b = $0; next } { b = b "\n" $0 } /^$/ { if (b ~ /lock_PyThread/ && b !~ /wait_forever/) { print b; exit } }' "$T/stacks.txt" >&2
	fail "$((native - python)) blocked threads lack their Python frames"
}
ok "every blocked thread ($python) has its Python frame"
