# profctl stacks --async: the asyncio tasks of a real CPython 3.14/3.15
# process (Debian sid's builds), by name, each with the coroutine chain it
# is suspended in and the tasks awaiting it (tests/workloads/py_async.py);
# a clear error for a Python without asyncio introspection (3.13) and for
# one that has not imported asyncio.
. "$(dirname "$0")/lib.sh"

mapfile -t SID < <("$SRC/tests/e2e/get_debian_pythons.sh" "$BUILD/debian-pythons" 14 15)
[ "${#SID[@]}" -gt 0 ] || skip "sid's CPython 3.14/3.15 not available (reason above): asyncio introspection needs 3.14+"
W_PY="$SRC/tests/workloads/py_async.py"

# task_block NAME FILE: the lines of task NAME's entry in the text listing.
task_block() { awk -v n="Task \"$1\"" 'index($0, n) == 1 { on = 1; print; next } /^$/ { on = 0 } on' "$2"; }

start_profd --rate 99
for py in "${SID[@]}"; do
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	start_ready "$py" "$W_PY" 60
	ctl stacks --pid "$W" --async >"$T/tasks.txt" 2>"$T/tasks.err" ||
		{ cat "$T/tasks.err" >&2; fail "python $ver: stacks --async failed"; }
	for name in fetcher-0 fetcher-1 fetcher-2 consumer parent child Task-1; do
		task_block "$name" "$T/tasks.txt" >"$T/one.txt"
		[ -s "$T/one.txt" ] || { cat "$T/tasks.txt" >&2; fail "python $ver: task $name not listed"; }
	done
	# Innermost first: asyncio's sleep, wait_for_data on the line of its
	# await, then fetch.
	for name in fetcher-0 fetcher-1 fetcher-2 child; do
		task_block "$name" "$T/tasks.txt" | sed 's/^ *//' >"$T/one.txt"
		grep -A1 -x "wait_for_data (${W_PY}:14)" "$T/one.txt" | sed -n 2p |
			grep -qx "fetch (${W_PY}:18)" && sed -n 2p "$T/one.txt" | grep -q "^sleep (.*tasks.py:" ||
			{ cat "$T/one.txt" >&2; fail "python $ver: $name's chain is not sleep <- wait_for_data <- fetch"; }
	done
	task_block consumer "$T/tasks.txt" | grep -q "consume (${W_PY}:23)" ||
		{ cat "$T/tasks.txt" >&2; fail "python $ver: consumer not suspended in consume"; }
	task_block consumer "$T/tasks.txt" | grep -q "Queue.get (.*queues.py:" ||
		{ cat "$T/tasks.txt" >&2; fail "python $ver: consumer's chain lacks Queue.get"; }
	task_block child "$T/tasks.txt" | head -1 | grep -q 'awaited by parent' ||
		{ cat "$T/tasks.txt" >&2; fail "python $ver: child not awaited by parent"; }
	task_block Task-1 "$T/tasks.txt" | grep -q "main (${W_PY}:38)" ||
		{ cat "$T/tasks.txt" >&2; fail "python $ver: asyncio.run's task not in main"; }
	ok "python $ver: 7 tasks by name; fetchers in sleep <- wait_for_data <- fetch, consumer in Queue.get, child awaited by parent"
	# The same as JSON.
	ctl stacks --pid "$W" --async --json >"$T/tasks.json" || fail "python $ver: --json failed"
	python3 - "$T/tasks.json" "$W_PY" <<'PY' || fail "python $ver: JSON listing wrong"
import json, sys
tasks = {t["name"]: t for t in json.load(open(sys.argv[1]))}
assert tasks["child"]["awaited_by"] == ["parent"], tasks["child"]
chain = tasks["fetcher-1"]["coroutines"]
assert chain[1:3] == ["wait_for_data (%s:14)" % sys.argv[2], "fetch (%s:18)" % sys.argv[2]], chain
assert chain[0].startswith("sleep ("), chain
assert all(t["running_tid"] == 0 for t in tasks.values()), tasks
PY
	ok "python $ver: the JSON listing says the same"
	kill "$W"
	# A task computing right now: the thread running it is named.
	start_ready "$py" -c '
import asyncio
def burn():
    return sum(range(10000))
async def spin():
    print("ready", flush=True)
    while True:
        burn()
async def main():
    await asyncio.create_task(spin(), name="spinner")
asyncio.run(main())'
	ctl stacks --pid "$W" --async >"$T/spin.txt" || fail "python $ver: stacks --async of a busy loop failed"
	task_block spinner "$T/spin.txt" | head -1 | grep -q "running in thread $W, awaited by Task-1" ||
		{ cat "$T/spin.txt" >&2; fail "python $ver: the running task is not shown running in thread $W"; }
	ok "python $ver: $(task_block spinner "$T/spin.txt" | head -1)"
	kill "$W"
	# Not imported: a clear error (3.14 loads _asyncio on import), or where
	# the interpreter has it built in (3.15), an empty listing that says so.
	start_ready "$py" -c 'import time; print("ready", flush=True); time.sleep(60)'
	if ctl stacks --pid "$W" --async >"$T/none.txt" 2>"$T/err"; then
		[ "$(cat "$T/none.txt")" = "no asyncio tasks" ] ||
			{ cat "$T/none.txt" >&2; fail "python $ver: tasks listed for a program without asyncio"; }
		ok "python $ver without asyncio: $(cat "$T/none.txt")"
	else
		grep -q "has not imported asyncio" "$T/err" ||
			{ cat "$T/err" >&2; fail "python $ver: unclear error without asyncio"; }
		ok "python $ver without asyncio: $(cat "$T/err")"
	fi
	kill "$W"
done

# More tasks than one listing takes (a server with a connection each):
# 4096 listed, and the listing says it is cut.
start_ready "${SID[0]}" -c '
import asyncio
async def leaf():
    await asyncio.sleep(3600)
async def conn():
    await leaf()
async def main():
    tasks = [asyncio.create_task(conn(), name=f"conn-{i}") for i in range(6000)]
    await asyncio.sleep(0.5)
    print("ready", flush=True)
    await asyncio.sleep(3600)
asyncio.run(main())'
t0=$(date +%s%N)
ctl stacks --pid "$W" --async >"$T/many.txt" || fail "stacks --async of 6000 tasks failed"
ms=$((($(date +%s%N) - t0) / 1000000))
# Every task counts (main's own task, Task-1, is among them); the cut
# note is not a task.
n=$(grep '^Task "' "$T/many.txt" | grep -vc '^Task "\[listing cut')
nconn=$(grep -c '^Task "conn-[0-9]*"' "$T/many.txt")
# Cut at the task cap, or (a slow machine, a sanitizer build) by the
# time budget first: either way said, with what came listed.
if grep -q '^Task "\[listing cut at 4096 tasks\]"' "$T/many.txt"; then
	[ "$n" = 4096 ] || fail "6000 tasks: $n listed, cut at 4096 said"
elif grep -q '^Task "\[listing cut after [0-9]* tasks: 500 ms spent\]"' "$T/many.txt"; then
	[ "$n" -ge 200 ] || fail "6000 tasks: only $n listed in the time budget"
else
	tail -3 "$T/many.txt" >&2
	fail "6000 tasks: $n listed, the cut not said"
fi
[ "$nconn" -ge $((n - 1)) ] && [ "$(grep -A2 '^Task "conn-' "$T/many.txt" | grep -c '^    leaf (')" -ge "$nconn" ] ||
	fail "6000 tasks: chains missing"
ok "6000 tasks: $n listed with their chains in $ms ms, the cut said"
kill "$W"

# Before 3.14 there is nothing to read the tasks with: said so.
root=$(pyenv root 2>/dev/null) || root=/nonexistent
for py in /usr/bin/python3.13 "$root"/versions/3.13*/bin/python3; do
	[ -x "$py" ] || continue
	start_ready "$py" "$W_PY" 60
	! ctl stacks --pid "$W" --async >/dev/null 2>"$T/err" || fail "3.13: stacks --async succeeded"
	grep -q "3.14 or later" "$T/err" || { cat "$T/err" >&2; fail "3.13: unclear error"; }
	ok "python 3.13: $(cat "$T/err")"
	kill "$W"
	break
done
stop_profd
