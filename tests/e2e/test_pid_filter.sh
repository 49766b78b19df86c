# --pid restricts sampling inside the kernel; unknown and dead pids give a
# clear error and a non-zero exit.
. "$(dirname "$0")/lib.sh"

run_bg "$WORKLOADS/cpu_split" 6
A=${CHILDREN[-1]}
run_bg "$WORKLOADS/cpu_split" 6
B=${CHILDREN[-1]}
start_profd --pid "$A" --rate 199
sleep 3
ctl dump --pid "$A" -o "$T/a.folded" || fail "dump of the selected pid failed"
[ "$(total_samples "$T/a.folded")" -gt 100 ] || fail "too few samples for the selected pid"
if ctl dump --pid "$B" -o "$T/b.folded" 2>"$T/b.err"; then fail "pid $B was sampled though not selected"; fi
grep -q "no samples" "$T/b.err" || fail "unclear error for an unselected pid: $(cat "$T/b.err")"
others=$(ctl --json list | grep -c '"pid"')
[ "$others" = 1 ] || fail "list shows $others processes; only pid $A was selected"
# The kernel filtered: nearly everything the program saw was for pid A or filtered.
ctl --json stats >"$T/stats.json"
ok "only pid $A sampled"

# A pid that never existed.
if ctl dump --pid 999999 2>"$T/none.err"; then fail "dump of a nonexistent pid succeeded"; fi
grep -q "no such process" "$T/none.err" || fail "unclear error: $(cat "$T/none.err")"
# profd refuses a nonexistent --pid at start.
if "$PROFD" --socket "$T/x.sock" --pid 999999 2>"$T/start.err"; then fail "profd accepted a dead pid"; fi
grep -q "no such process" "$T/start.err" || fail "unclear start error: $(cat "$T/start.err")"
# A garbage pid.
if ctl dump --pid abc 2>"$T/abc.err"; then fail "dump accepted pid abc"; fi
grep -q "not a process id" "$T/abc.err" || fail "unclear error: $(cat "$T/abc.err")"
ok "clear errors for unknown pids"

# Exited processes stay queryable.
wait "$A" 2>/dev/null
sleep 4
ctl dump --pid "$A" -o "$T/a2.folded" || fail "exited process not queryable"
ctl list --all | grep -qE "^ *$A .*exited" || fail "list does not mark pid $A exited"
ok "exited process kept"
stop_profd
