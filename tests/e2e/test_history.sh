# History survives restarts: a kill -9 loses at most one flush interval,
# SIGTERM loses nothing, and exited processes stay queryable (and listed)
# after the daemon restarts.
. "$(dirname "$0")/lib.sh"

RATE=199
FLUSH=2s
restart() { start_profd --rate "$RATE" --flush-interval "$FLUSH"; }

restart
run_bg "$WORKLOADS/cpu_split" 4
A=${CHILDREN[-1]}
wait "$A"
sleep 3 # past one flush
ctl dump --pid "$A" -o "$T/a1.folded" || fail "dump before restart failed"
n1=$(total_samples "$T/a1.folded")

# kill -9 with a process still running.
run_bg "$WORKLOADS/cpu_split" 30
B=${CHILDREN[-1]}
sleep 5
ctl dump --pid "$B" -o "$T/b1.folded" || fail "dump of the running process failed"
b1=$(total_samples "$T/b1.folded")
kill -9 "$PROFD_PID"; wait "$PROFD_PID" 2>/dev/null; PROFD_PID=
restart
ctl dump --pid "$A" -o "$T/a2.folded" || fail "exited process lost across kill -9"
n2=$(total_samples "$T/a2.folded")
[ "$n2" = "$n1" ] || fail "exited process: $n1 samples before, $n2 after kill -9 (it was flushed)"
ctl list --all | grep -qE "^ *$A .*exited" || fail "list after restart does not show pid $A"
ctl dump --pid "$B" -o "$T/b2.folded" || fail "running process lost across kill -9"
b2=$(total_samples "$T/b2.folded")
lost=$((b1 > b2 ? b1 - b2 : 0))
limit=$((RATE * 3 + RATE / 2)) # the 2 s flush interval + the 1 s tick that runs it + the dump-to-kill gap
echo "kill -9: exited process $n1 -> $n2 samples; running process had $b1 at the kill, history $b2 ($lost lost, limit $limit)"
[ "$lost" -le "$limit" ] || fail "kill -9 lost $lost samples, more than one flush interval ($limit)"
ok "kill -9 lost $lost samples (at most one flush interval)"
ctl dump --pid "$A" --since 10m -o "$T/a3.folded" || fail "dump --since after restart failed"
[ "$(total_samples "$T/a3.folded")" = "$n1" ] || fail "--since 10m does not return the same samples"
ok "time window over history"

# SIGTERM flushes everything.
kill "$B"; wait "$B" 2>/dev/null
sleep 0.5
ctl dump --pid "$B" -o "$T/b3.folded" || fail "dump before SIGTERM failed"
b3=$(total_samples "$T/b3.folded")
stop_profd
restart
ctl dump --pid "$B" -o "$T/b4.folded" || fail "dump after SIGTERM restart failed"
b4=$(total_samples "$T/b4.folded")
echo "SIGTERM: $b3 samples before, $b4 after restart"
[ "$b4" = "$b3" ] || fail "SIGTERM lost $((b3 - b4)) samples"
ok "SIGTERM loses nothing"
ctl --json stats | grep -q '"history_enabled": 1' || fail "stats do not show history"
stop_profd
