# profctl's commands against the real daemon: record's exact window, top,
# selection by comm and exe, every dump format, clear errors.
. "$(dirname "$0")/lib.sh"

start_profd --rate 99
run_bg "$WORKLOADS/cpu_split" 12
W=${CHILDREN[-1]}
sleep 1.5

# record: the window is exactly the recording, not the bucket around it:
# as many samples as the workload ran for in those 3 s (its CPU time from
# /proc: cpu-clock samples a thread only while it runs, so a busy machine
# gives fewer, never more), at 99 Hz.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$W/stat"; }
c0=$(cpu_ticks)
ctl record --pid "$W" --duration 3s -f folded -o "$T/rec.folded" 2>"$T/rec.err" || fail "record failed: $(cat "$T/rec.err")"
c1=$(cpu_ticks)
n=$(total_samples "$T/rec.folded")
want=$(( (c1 - c0) * 99 / $(getconf CLK_TCK) ))
echo "record: $n samples in 3 s at 99 Hz; the workload ran $((c1 - c0)) ticks (expected ~$want, at most 297)"
[ "$n" -le 320 ] || fail "record got $n samples for 3 s at 99 Hz (more than 3 s can hold)"
[ "$want" -ge 30 ] || fail "the workload hardly ran during the recording ($((c1 - c0)) ticks)"
[ $((n * 100)) -ge $((want * 80)) ] && [ $((n * 100)) -le $((want * 120 + 1000)) ] ||
	fail "record got $n samples; the workload's CPU time in the window says ~$want"
grep -q 'wrote' "$T/rec.err" || fail "record did not say what it wrote"
ok "record window exact"

# top prints once off a terminal, hottest first.
ctl top --pid "$W" -n 5 >"$T/top.txt" || fail "top failed"
sed -n '3,5p' "$T/top.txt"
grep -q 'OWN%' "$T/top.txt" && grep -qE '^ +[0-9.]+% +[0-9.]+% .* spin$' "$T/top.txt" || fail "top does not show spin"
ok "top"

# Selection by comm and exe: a root frame per matching process.
ctl dump --comm cpu_split -o "$T/comm.folded" || fail "dump --comm failed"
grep -q "^cpu_split ($W);" "$T/comm.folded" || fail "dump --comm lacks the process root"
ctl dump --exe cpu_split -o "$T/exe.folded" || fail "dump --exe failed"
grep -q "^cpu_split ($W);" "$T/exe.folded" || fail "dump --exe lacks the process root"
if ctl dump --comm no-such-command 2>"$T/nocomm.err"; then fail "dump --comm of nothing succeeded"; fi
grep -q "no process with samples matches" "$T/nocomm.err" || fail "unclear error: $(cat "$T/nocomm.err")"
ok "comm and exe selection"

# Every format from the daemon.
for f in folded svg pprof speedscope json; do
	ctl dump --pid "$W" -f "$f" -o "$T/out.$f" || fail "dump -f $f failed"
	[ -s "$T/out.$f" ] || fail "dump -f $f wrote nothing"
done
if ctl dump --pid "$W" -f pstats -o "$T/out.pstats" 2>"$T/pstats.err"; then fail "pstats of a C program succeeded"; fi
grep -q "no Python frames" "$T/pstats.err" || fail "unclear pstats error: $(cat "$T/pstats.err")"
if ctl dump --pid "$W" -f nope 2>"$T/fmt.err"; then fail "unknown format accepted"; fi
grep -q "unknown format" "$T/fmt.err" || fail "unclear format error"
if ctl dump --pid "$W" --type nope 2>"$T/type.err"; then fail "unknown type accepted"; fi
grep -q "unknown profile type" "$T/type.err" || fail "unclear type error: $(cat "$T/type.err")"
ok "formats and errors"

# diff of two time windows of the same process.
ctl diff --pid "$W" --before 4s..2s --after 2s.. -o "$T/diff.svg" 2>"$T/diff.err" || fail "diff of windows failed: $(cat "$T/diff.err")"
grep -q 'leaf_heavy' "$T/diff.svg" || fail "window diff lacks the workload's frames"
grep -q 'before [1-9][0-9]* , after [1-9]\|before [1-9][0-9]*, after [1-9]' "$T/diff.err" || fail "window diff summary: $(cat "$T/diff.err")"
if ctl diff --pid "$W" --before 1s..2s --after 1s 2>/dev/null; then fail "a backwards window was accepted"; fi
ok "diff of time windows"
stop_profd
