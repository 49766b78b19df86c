# profctl list: one unit per column, running processes first.  Under
# profd --all-processes --off-cpu, a process that naps nearly all the
# time, one that burns CPU, and a napper that exits:
#  - SAMPLES is CPU samples, as many as each one's CPU time makes: a
#    napper's stay few (its blocked nanoseconds are not added in);
#  - -t off-cpu: a napper's blocked time in seconds (OFF_CPU_S), about as
#    long as it napped;
#  - the exited napper is left out by default, shown by --all and by a
#    --since span it ended in, not by one it ended before; the burner
#    and every running process come before it;
#  - --json: cpu_samples is samples, off_cpu_ns the column in ns;
#  - after a restart the exited napper, now read from history, has the
#    same CPU samples and blocked time (history once summed every type's
#    weights into its samples); a process that ended while no profd ran
#    (the napper, and the previous profd itself, which profiles itself)
#    is listed as exited, not running as history last saw it.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || fail "python3 is missing (packaging/setup.sh installs it)"
PY=$(python3 -c 'import sys; print(sys.executable)') # not a wrapper that spends CPU first
RATE=99
NAP='import sys, time
for _ in range(int(sys.argv[1])): time.sleep(0.05)'

# row FILE PID: PID's line of a list table.
row() { awk -v p="$2" '$1 == p' "$1"; }
# col FILE PID NAME: PID's figure under column NAME.
col() {
	awk -v p="$2" -v c="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i }
		$1 == p && k { print $k }' "$1"
}
# between X LO HI: LO <= X <= HI, as decimals.
between() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x != "" && x >= lo && x <= hi) }'; }
# cpu_samples PID: the samples PID's CPU time so far makes at RATE (from
# /proc: a busy machine gives the burner less CPU, and fewer samples).
cpu_samples() { awk -v r="$RATE" -v t="$(getconf CLK_TCK)" '{ print int(($14 + $15) * r / t) }' "/proc/$1/stat"; }

start_profd --all-processes --off-cpu --rate "$RATE"
run_bg "$WORKLOADS/cpu_split" 60
B=${CHILDREN[-1]}
t_s=$(date +%s.%N)
run_bg "$PY" -c "$NAP" 2000
S=${CHILDREN[-1]}
run_bg "$PY" -c "$NAP" 40
E=${CHILDREN[-1]}
# One that only blocks (coreutils sleep: rarely a CPU sample at 99 Hz).
run_bg sleep 2
Z=${CHILDREN[-1]}
sleep 6
wait "$E" || fail "the short napper failed"

ctl list >"$T/list.txt" || fail "list failed"
ctl list -t off-cpu >"$T/offcpu.txt" || fail "list -t off-cpu failed"
# Up to the read: the napper naps on while the lists are made.
ran=$(awk -v a="$t_s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
ctl list --all >"$T/all.txt" || fail "list --all failed"
ctl --json list --all >"$T/all.json" || fail "--json list --all failed"
echo "profctl list (napper $S, burner $B, exited napper $E):"
head -1 "$T/list.txt"; row "$T/list.txt" "$B"; row "$T/list.txt" "$S"
echo "profctl list -t off-cpu:"
head -1 "$T/offcpu.txt"; row "$T/offcpu.txt" "$S"

s_samples=$(col "$T/list.txt" "$S" SAMPLES)
b_samples=$(col "$T/list.txt" "$B" SAMPLES)
s_off=$(col "$T/offcpu.txt" "$S" OFF_CPU_S)
s_want=$(cpu_samples "$S")
b_want=$(cpu_samples "$B")
[ -n "$s_samples" ] || fail "list does not show the napper $S: $(cat "$T/list.txt")"
# At most what its CPU time makes (and a tick's rounding).
between "$s_samples" 0 $((s_want * 12 / 10 + 10)) ||
	fail "the napper's SAMPLES is $s_samples, its CPU time makes $s_want: not CPU samples"
# What its CPU time makes, but for the last second's, which ingest may
# not have read yet.
between "$b_samples" $((b_want * 8 / 10 - RATE)) $((b_want * 12 / 10 + 10)) ||
	fail "the burner's SAMPLES is '$b_samples', its CPU time makes $b_want"
between "$s_off" "$(awk -v r="$ran" 'BEGIN { print r / 2 }')" "$ran" ||
	fail "the napper's OFF_CPU_S is '$s_off' after ${ran} s of naps"
ok "SAMPLES is CPU samples (napper $s_samples, its CPU time ~$s_want; burner $b_samples, ~$b_want); OFF_CPU_S ${s_off} s of ${ran} s"

[ -z "$(row "$T/list.txt" "$E")" ] || fail "list shows the exited $E without --all"
if grep -q ' exited ' "$T/list.txt"; then fail "list shows exited processes: $(grep ' exited ' "$T/list.txt" | head -3)"; fi
row "$T/all.txt" "$E" | grep -q ' exited ' || fail "list --all does not show the exited $E"
first_exited=$(awk '/ exited / { print NR; exit }' "$T/all.txt")
last_running=$(awk '/ running / { n = NR } END { print n + 0 }' "$T/all.txt")
b_line=$(awk -v p="$B" '$1 == p { print NR }' "$T/all.txt")
[ "$last_running" -lt "$first_exited" ] && [ "$b_line" -lt "$first_exited" ] ||
	fail "list --all: running processes (burner on line $b_line) not all above the exited (line $first_exited)"
ctl list --since 1m | grep -qE "^ *$E .* exited " || fail "list --since 1m does not show $E"
sleep 2
if ctl list --since 1s | grep -qE "^ *$E "; then fail "list --since 1s shows $E, which ended earlier"; fi
echo "profctl list --all (first lines, then the exited napper):"
head -4 "$T/all.txt"; row "$T/all.txt" "$E"
ok "exited processes only with --all or --since, below the running ones ($(grep -c ' exited ' "$T/all.txt") exited)"

python3 - "$T/all.json" "$S" "$E" "$s_off" <<'PYEOF' || fail "list --json (above)"
import json, sys
procs = json.load(open(sys.argv[1]))
s, e, s_off = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
for p in procs:
    assert p["cpu_samples"] == p["samples"], p
    assert p["exited"] == (p["exit_ns"] > 0), p
state = [p["exited"] for p in procs]
assert state == sorted(state), "running processes are not all first"
nap = next(p for p in procs if p["pid"] == s)
# The column read a moment before: the napper has napped on since.
assert s_off - 0.01 <= nap["off_cpu_ns"] / 1e9 <= s_off + 3, (s_off, nap["off_cpu_ns"])
assert nap["wall_ns"] >= nap["off_cpu_ns"], nap
assert next(p for p in procs if p["pid"] == e)["exited"]
PYEOF
ok "--json: cpu_samples is samples, off_cpu_ns is OFF_CPU_S in ns"

# The exited napper again, from history.
e_samples=$(col "$T/all.txt" "$E" SAMPLES)
ctl list --all -t off-cpu >"$T/e1.txt" || fail "list --all -t off-cpu failed"
e_off=$(col "$T/e1.txt" "$E" OFF_CPU_S)
# The daemon profiles itself: the next one finds it in history.
P1=$PROFD_PID
[ -n "$(row "$T/e1.txt" "$P1")" ] || fail "list does not show profd $P1 itself: $(head -5 "$T/e1.txt")"
stop_profd
# The napper ends while no profd runs: history says it was running.
kill "$S"; wait "$S" 2>/dev/null
start_profd --all-processes --off-cpu --rate "$RATE"
ctl list --all -t off-cpu >"$T/e2.txt" || fail "list after the restart failed"
row "$T/e2.txt" "$S" | grep -q ' exited ' ||
	fail "after a restart, the napper $S that ended meanwhile is listed as: $(row "$T/e2.txt" "$S")"
row "$T/e2.txt" "$B" | grep -q ' running ' ||
	fail "after a restart, the running burner $B is listed as: $(row "$T/e2.txt" "$B")"
[ -z "$(ctl list | row /dev/stdin "$S")" ] || fail "after a restart, list without --all shows the ended napper $S"
row "$T/e2.txt" "$P1" | grep -q ' exited ' ||
	fail "after a restart, the previous profd $P1 is listed as: $(row "$T/e2.txt" "$P1")"
ok "after a restart: the napper that ended meanwhile and the previous profd are exited, the burner running"
echo "after a restart, the previous profd: $(row "$T/e2.txt" "$P1")"
echo "after a restart: $(row "$T/e2.txt" "$E")"
[ "$(col "$T/e2.txt" "$E" SAMPLES)" = "$e_samples" ] && [ "$(col "$T/e2.txt" "$E" OFF_CPU_S)" = "$e_off" ] ||
	fail "exited $E: SAMPLES $e_samples, OFF_CPU_S $e_off before the restart; from history: $(row "$T/e2.txt" "$E")"
between "$e_off" 1 3 || fail "exited $E napped 2 s, OFF_CPU_S '$e_off'"
# Listed from history by its span, which its blocks give (it once took
# CPU samples only: one that only blocked was not listed after a restart).
z_off=$(col "$T/e2.txt" "$Z" OFF_CPU_S)
between "$z_off" 1.9 2.5 ||
	fail "after a restart, sleep 2 ($Z, $(col "$T/e1.txt" "$Z" SAMPLES) samples before) is listed with OFF_CPU_S '$z_off'"
ok "from history too: $e_samples CPU samples and $e_off s off-CPU for the exited napper; sleep 2: $z_off s"
stop_profd
