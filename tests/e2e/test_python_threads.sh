# Several threads and multiprocessing workers, with Debian's python3.
. "$(dirname "$0")/lib.sh"

PY=$(command -v python3.11 || command -v python3) || fail "no python3"
start_profd --rate 499

# Threads: --by-thread puts a root per thread, each with the chain.
run_bg "$PY" "$SRC/tests/workloads/py_split.py" 4 3
W=${CHILDREN[-1]}
sleep 3
ctl dump --pid "$W" --by-thread --python-only -o "$T/threads.folded" || fail "dump --by-thread failed"
threads=$(grep -E ';main \(.*;mid \(.*;leaf_(heavy|light) \(' "$T/threads.folded" | cut -d';' -f1 | sort -u)
echo "$threads"
n=$(echo "$threads" | grep -c .)
[ "$n" -ge 3 ] || fail "expected 3 threads with the chain, got $n"
# CPython < 3.14 leaves OS thread names alone: roots are "comm (tid)".
echo "$threads" | grep -qE '^[^;]+ \([0-9]+\)$' || fail "thread roots are not 'name (tid)'"
grep -q 'Thread._bootstrap\|_bootstrap (' "$T/threads.folded" || fail "worker threads lack threading frames"
ok "$n threads, each with its own root and full chain"

# Multiprocessing: each worker process has its own profile with the chain.
"$PY" "$SRC/tests/workloads/py_mp.py" 5 >"$T/mp.pids" &
MP=$!
CHILDREN+=($MP)
# Wait for both workers to report (pool start-up is slow on a busy host).
for i in $(seq 1 50); do
	[ "$(grep -c '^[0-9]' "$T/mp.pids")" -ge 2 ] && break
	sleep 0.1
done
sleep 1.5 # let them run in burn() for a while
mapfile -t WORKERS < <(grep '^[0-9]' "$T/mp.pids" | sort -u)
[ "${#WORKERS[@]}" = 2 ] || fail "expected 2 worker pids, got ${#WORKERS[@]}"
for w in "${WORKERS[@]}"; do
	ctl dump --pid "$w" --python-only -o "$T/w$w.folded" || fail "worker $w: dump failed"
	grep -qE '^<module> \(.*py_mp.py:[0-9]+\);main \(.*;work \(.*py_mp.py:[0-9]+\);burn \(.*py_mp.py:[0-9]+\) [0-9]+$' "$T/w$w.folded" ||
		fail "worker $w lacks <module>;main;...;work;burn: $(sort -t' ' -k2 -n "$T/w$w.folded" | tail -2)"
done
ok "multiprocessing workers ${WORKERS[*]} profiled with their chain"
wait "$MP"
# Exited workers stay queryable.
sleep 1.5
ctl dump --pid "${WORKERS[0]}" -o /dev/null || fail "exited worker not queryable"
ok "exited worker still queryable"
stop_profd
