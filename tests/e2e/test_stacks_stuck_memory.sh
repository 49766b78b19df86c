# A process whose memory never answers a read must not hold profd's
# control thread: tests/workloads/uffd_blocker looks like a CPython whose
# _PyRuntime is a userfaultfd range nobody serves (as a FUSE file whose
# server never answers would be).  `profctl stacks --pid` on it answers
# within the memory read's deadline (1.5 s) with its threads and "memory
# read timed out", --async with a clear error; meanwhile other clients'
# stats and list answer promptly; at MEMREAD_MAX_STUCK (8) stuck readers a
# further read is refused and counted; once the blocker exits every stuck
# reader returns and cleans up, and profd reads a real Python again.
. "$(dirname "$0")/lib.sh"

PY=$(command -v python3) || fail "no python3"
TOOLS=$(dirname "$0")/tools
MAX_STUCK=8

start_profd --rate 99
"$WORKLOADS/uffd_blocker" 120 >"$T/blocker.out" 2>&1 &
B=$!
CHILDREN+=("$B")
for _ in $(seq 1 50); do grep -q ready "$T/blocker.out" && break; sleep 0.1; done
if ! grep -q ready "$T/blocker.out"; then
	wait "$B"
	[ $? = 77 ] && skip "no userfaultfd here: $(cat "$T/blocker.out")"
	fail "uffd_blocker did not start: $(cat "$T/blocker.out")"
fi

# Other clients all along: stats through the wire every 50 ms, and
# profctl list (a process each) in a loop, each with its latency.
run_bg "$PY" "$TOOLS/ctl_latency.py" --profctl "$PROFCTL" --socket "$SOCK" --seconds 14 \
	--every 0.05 --out "$T/lat"
LAT_PID=${CHILDREN[-1]}
(
	end=$(($(date +%s) + 13))
	while [ "$(date +%s)" -lt "$end" ]; do
		t0=$(date +%s%N)
		ctl list >/dev/null 2>&1
		rc=$?
		echo "$((($(date +%s%N) - t0) / 1000000)) $rc"
		sleep 0.05
	done >"$T/list_lat"
) &
LIST_PID=$!
CHILDREN+=("$LIST_PID")
sleep 0.5

# ms_of CMD...: run CMD, keep its output in $T/out and $T/err, print ms.
ms_of() {
	local t0 rc
	t0=$(date +%s%N)
	"$@" >"$T/out" 2>"$T/err"
	rc=$?
	echo "$((($(date +%s%N) - t0) / 1000000)) $rc"
}

read -r ms rc < <(ms_of ctl stacks --pid "$B")
[ "$rc" = 0 ] || { cat "$T/err" >&2; fail "stacks --pid on the blocker failed (rc $rc)"; }
grep -q "memory read timed out" "$T/out" || { cat "$T/out" >&2; fail "stacks --pid does not say the read timed out"; }
[ "$ms" -lt 3000 ] || fail "stacks --pid took $ms ms"
ok "stacks --pid answered in $ms ms: $(grep -c "memory read timed out" "$T/out") thread(s) with \"memory read timed out\""

read -r ms rc < <(ms_of ctl stacks --pid "$B" --async)
[ "$rc" != 0 ] || { cat "$T/out" >&2; fail "stacks --async on the blocker succeeded"; }
grep -q "memory read timed out" "$T/err" || { cat "$T/err" >&2; fail "stacks --async does not say the read timed out"; }
[ "$ms" -lt 3000 ] || fail "stacks --async took $ms ms"
ok "stacks --async answered in $ms ms: $(cat "$T/err")"

# More, until MAX_STUCK readers are stuck (each waits on the same page).
# Four at once (MAX_SLOW_ANSWERS): a fifth would be told to try again.
MORE=()
for _ in $(seq 3 6); do
	ctl stacks --pid "$B" >/dev/null 2>&1 &
	MORE+=($!)
done
wait "${MORE[@]}"
for _ in $(seq 1 20); do
	[ "$(stat_of memread_readers_stuck)" -ge "$MAX_STUCK" ] && break
	ctl stacks --pid "$B" >/dev/null 2>&1
done
stuck=$(stat_of memread_readers_stuck)
[ "$stuck" = "$MAX_STUCK" ] || fail "memread_readers_stuck is $stuck, not $MAX_STUCK"
read -r ms rc < <(ms_of ctl stacks --pid "$B" --async)
grep -q "reads of processes' memory are stuck" "$T/err" || { cat "$T/err" "$T/out" >&2; fail "no refusal at $MAX_STUCK stuck readers"; }
[ "$ms" -lt 1000 ] || fail "the refusal took $ms ms"
read -r ms rc < <(ms_of ctl stacks --pid "$B")
[ "$rc" = 0 ] && grep -q "reads of processes' memory are stuck" "$T/out" ||
	{ cat "$T/err" "$T/out" >&2; fail "stacks --pid at $MAX_STUCK stuck readers does not say why"; }
refused=$(stat_of memread_refused_too_many_stuck)
[ "$refused" -ge 2 ] || fail "memread_refused_too_many_stuck is $refused"
ok "$stuck readers stuck; a further read refused at once ($ms ms), counted: memread_refused_too_many_stuck $refused"

wait "$LAT_PID" "$LIST_PID"
n=$(wc -l <"$T/lat")
bad=$(awk '$2 != 0' "$T/lat" "$T/list_lat" | wc -l)
[ "$bad" = 0 ] || fail "$bad stats/list requests failed"
max=$(sort -n "$T/lat" | tail -n 1 | cut -d' ' -f1)
p99=$(sort -n "$T/lat" | awk '{ v[NR] = $1 } END { i = int(NR * 0.99); if (i < 1) i = 1; print v[i] }')
lmax=$(sort -n "$T/list_lat" | tail -n 1 | cut -d' ' -f1)
ln=$(wc -l <"$T/list_lat")
echo "meanwhile: stats $n requests, p99 $p99 ms, worst $max ms; list (profctl, a process each) $ln requests, worst $lmax ms"
awk -v m="$max" 'BEGIN { exit !(m <= 250) }' || fail "a stats request waited $max ms behind the blocker"
[ "$lmax" -le 500 ] || fail "a list request waited $lmax ms behind the blocker"
ok "other clients answered while readers were stuck: stats worst $max ms, list worst $lmax ms"

# The blocker goes: its stuck readers return and clean up.
kill "$B"
wait "$B" 2>/dev/null
for _ in $(seq 1 50); do [ "$(stat_of memread_readers_stuck)" = 0 ] && break; sleep 0.1; done
[ "$(stat_of memread_readers_stuck)" = 0 ] || fail "readers still stuck after the blocker exited"
late=$(stat_of memread_returned_late)
[ "$late" = "$MAX_STUCK" ] || fail "memread_returned_late is $late, not $MAX_STUCK"
ok "blocker gone: $late stuck readers returned and cleaned up"

# And profd reads a real Python as before.
run_bg "$PY" -c 'import time
def parked():
    time.sleep(60)
print("ready", flush=True)
parked()' >"$T/py.out"
P=${CHILDREN[-1]}
for _ in $(seq 1 50); do grep -q ready "$T/py.out" && break; sleep 0.1; done
ctl stacks --pid "$P" >"$T/py.txt" 2>&1 || { cat "$T/py.txt" >&2; fail "stacks on a real Python failed"; }
grep -q "parked (" "$T/py.txt" || { cat "$T/py.txt" >&2; fail "no Python frame read after the blocker"; }
ctl list >/dev/null || fail "list failed at the end"
kill -0 "$PROFD_PID" || fail "profd died"
ok "profd healthy: a real Python's stack read ($(grep -c 'parked (' "$T/py.txt") frame line), list answers"
