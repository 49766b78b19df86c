# Native stacks through JIT code: tests/workloads/jit copies a function
# built with frame pointers into anonymous executable memory, names it in
# /tmp/perf-PID.map, and calls it from main -> jit_a -> jit_b -> jit_c
# built without frame pointers.  The walk must cross the anonymous frame
# by its frame pointer and go on with the tables, so the callers up to
# main are still found, and the JIT frame must carry the perf map's name.
# A second copy runs frameless code whose rbp points at a fake frame:
# its walks must stop at the JIT frame, with no caller made up.  A third
# writes its map only after its code ran, then appends to it.
. "$(dirname "$0")/lib.sh"

CC=${CC:-cc}
SRCDIR=$SRC/tests/workloads/jit
NAME=JIT:hot_loop
$CC -O1 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-stack-protector -c \
	-o "$T/jitcode.o" "$SRCDIR/jitcode.c" || fail "building the JIT code"
$CC -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -o "$T/jit" "$SRCDIR/chain.c" \
	"$T/jitcode.o" || fail "building the program"
objdump -d "$T/jit" | grep -A3 -E '<jit_[abc]>:' | grep -q 'push *%rbp' &&
	fail "the callers have frame pointers"
objdump -d "$T/jit" | grep -A2 '<jit_code>:' | grep -q 'push *%rbp' ||
	fail "the JIT code has no frame pointer"

# The processes and their JIT code first, so that profd --pid has their
# mapping lists (with the anonymous mapping) before sampling starts.
start_jit() { # OUT ARGS...
	local out=$1 i
	shift
	run_bg "$T/jit" 10 "$NAME" "$@" >"$out"
	for i in $(seq 1 100); do grep -q ready "$out" 2>/dev/null && break; sleep 0.05; done
	grep -q ready "$out" || fail "the workload did not start"
	grep -q " $NAME\$" "/tmp/perf-${CHILDREN[-1]}.map" || fail "no perf map written"
}
trap 'rm -f /tmp/perf-$W.map /tmp/perf-$F.map; cleanup' EXIT
start_jit "$T/jit.out"
W=${CHILDREN[-1]}
start_jit "$T/frameless.out" frameless
F=${CHILDREN[-1]}

start_profd --rate 499 --pid "$W" --pid "$F"
# Enough samples of both, however busy the machine (at most 30 s).
for _ in $(seq 1 60); do
	sleep 0.5
	ctl dump --pid "$W" -o "$T/jit.folded" 2>/dev/null &&
		ctl dump --pid "$F" -o "$T/frameless.folded" 2>/dev/null || continue
	[ "$(total_samples "$T/jit.folded")" -ge 600 ] &&
		[ "$(total_samples "$T/frameless.folded")" -ge 300 ] && break
done
ctl dump --pid "$W" -o "$T/jit.folded" || fail "dump failed"
ctl dump --pid "$F" -o "$T/frameless.folded" || fail "dump failed"
ctl stats >"$T/stats"

# Samples with the JIT frame that have a user frame after it (it is the
# leaf: only kernel frames, an interrupt, may follow), a caller other
# than jit_c, or (unless $2 is "root-ok") no caller at all.
invented() {
	awk -v name="$NAME" -v rootok="${2:-}" '{
		n = $NF; $NF = ""; sub(/ $/, ""); k = split($0, f, ";")
		for (i = 1; i <= k && f[i] != name; i++) ;
		if (i > k) next
		if (i == 1 ? rootok != "root-ok" : f[i - 1] != "jit_c") { s += n; next }
		for (j = i + 1; j <= k; j++) if (f[j] !~ /_\[k\]$/) { s += n; next }
	} END { print s + 0 }' "$1"
}

total=$(total_samples "$T/jit.folded")
jit=$(sum_matching "$T/jit.folded" "(^|;)$NAME(;| |$)")
full=$(sum_matching "$T/jit.folded" "^_start;__libc_start_main;__libc_start_call_main;main;jit_a;jit_b;jit_c;$NAME(;| |$)")
anon=$(awk '$1 == "bpf_unwind_walks_through_anon_code" { print $2 }' "$T/stats")
pct=$(awk -v f="$full" -v j="$jit" 'BEGIN { printf "%.1f", j ? 100 * f / j : 0 }')
echo "JIT leaf named $NAME in $jit/$total samples; $full ($pct%) of them reach _start..main" \
	"through jit_a;jit_b;jit_c; bpf_unwind_walks_through_anon_code $anon"
[ "$total" -ge 200 ] || fail "only $total samples"
[ $((jit * 100)) -ge $((total * 80)) ] ||
	{ sort -k2 -rn "$T/jit.folded" | head -5 >&2; fail "the JIT frame is not named from the perf map"; }
ok "the JIT frame is named from the perf map"
awk -v p="$pct" 'BEGIN { exit !(p >= 90) }' ||
	{ awk '{ print $NF, $0 }' "$T/jit.folded" | sort -rn | head -5 >&2; fail "only $pct% of JIT samples reach main"; }
ok "callers through JIT code: $pct% reach main"
[ "${anon:-0}" -gt 0 ] || fail "bpf_unwind_walks_through_anon_code is ${anon:-missing}"
bad=$(invented "$T/jit.folded")
[ "$bad" = 0 ] || fail "$bad samples with frames around the JIT frame that are not there"
ok "no invented frames around the JIT frame"

# Frameless code on a fake frame: walks stop at the JIT frame (a sample
# on its first instruction may still find jit_c through the caller's rbp).
ftotal=$(sum_matching "$T/frameless.folded" "(^|;)$NAME(;| |$)")
alone=$(sum_matching "$T/frameless.folded" "^$NAME(;| |$)")
bad=$(invented "$T/frameless.folded" root-ok)
echo "frameless JIT code: $ftotal samples, $alone cut short at the JIT frame, $bad with a made-up caller"
[ "$ftotal" -ge 100 ] || fail "only $ftotal samples of the frameless JIT code"
[ "$bad" = 0 ] || { grep -F "$NAME" "$T/frameless.folded" | head -5 >&2; fail "$bad samples with a made-up caller of frameless JIT code"; }
[ $((alone * 100)) -ge $((ftotal * 90)) ] || fail "frameless JIT walks did not stop at the fake frame"
ok "frameless JIT code: no caller made up"

stop_profd

# A perf map written after the code ran unnamed, then grown.  Samples
# before the map say [anon] until it is read (at most a second after a
# miss); from then on every one is named, those before it too, and a
# line appended later names the code it adds.
L=
trap 'rm -f /tmp/perf-$W.map /tmp/perf-$F.map /tmp/perf-$L.map; cleanup' EXIT
run_bg "$T/jit" 30 "$NAME" late JIT:grown >"$T/late.out"
L=${CHILDREN[-1]}
for _ in $(seq 1 100); do grep -q ready "$T/late.out" 2>/dev/null && break; sleep 0.05; done
start_profd --rate 499 --bucket 1s --pid "$L"
# late_window SECONDS: $L's samples of the last whole buckets, once 200.
late_window() {
	for _ in $(seq 1 30); do
		sleep 1
		ctl dump --pid "$L" --since "$1" -o "$T/late.folded" 2>/dev/null || continue
		[ "$(total_samples "$T/late.folded")" -ge 200 ] && return 0
	done
	fail "fewer than 200 samples of $L in 30 s"
}
late_window 2s
unnamed=$(sum_matching "$T/late.folded" "(^|;)\[anon\](;| |$)")
echo "no perf map yet: $unnamed of $(total_samples "$T/late.folded") samples in [anon]"
[ "$unnamed" -gt 0 ] || fail "no [anon] samples before the map: $(heaviest "$T/late.folded" 3)"
before=$unnamed
# all_named SIGNAL NAME WHAT: after SIGNAL to $L (and the map's next
# reading), every sample of its JIT code is named NAME.
all_named() {
	local named unnamed
	kill -"$1" "$L"
	sleep 2.2 # the map is read again at most a second after a miss; whole buckets after it
	late_window 1s
	named=$(sum_matching "$T/late.folded" "(^|;)$2(;| |$)")
	unnamed=$(sum_matching "$T/late.folded" "(^|;)\[anon\](;| |$)")
	echo "$3: $named named $2, $unnamed [anon], of $(total_samples "$T/late.folded")"
	[ "$unnamed" = 0 ] && [ "$named" -gt 100 ] ||
		fail "$3: $named named, $unnamed unnamed: $(heaviest "$T/late.folded" 3)"
}
all_named USR1 "$NAME" "map written"
ok "a perf map written while the code runs: every sample after it named"
all_named USR2 JIT:grown "map grown"
ok "a perf map that grows: the new code named"
# The samples taken before the map was written, or before a line named
# the copy, were named once the map was read: none of the whole
# recording is left [anon], and the first window's [anon] samples are
# now the code's.
ctl dump --pid "$L" -o "$T/late_all.folded" || fail "dump of $L"
unnamed=$(sum_matching "$T/late_all.folded" "(^|;)\[anon\](;| |$)")
named=$(sum_matching "$T/late_all.folded" "(^|;)$NAME(;| |$)")
echo "whole recording: $named named $NAME, $unnamed [anon], of $(total_samples "$T/late_all.folded");" \
	"jit_frames_named_late $(stat_of jit_frames_named_late)"
[ "$unnamed" = 0 ] || fail "$unnamed samples left [anon]: $(heaviest "$T/late_all.folded" 3)"
[ "$named" -ge $((before + 100)) ] || fail "only $named samples named $NAME, $before of them before the map"
[ "$(stat_of jit_frames_named_late)" -ge 1 ] || fail "jit_frames_named_late is $(stat_of jit_frames_named_late)"
ok "the samples taken before the map named by it"
stop_profd

# The same code in a memfd (a file that is not ELF: JITs that keep W^X
# with two views of one memfd): unnamed, then named from the map written
# late, the samples before it too.
M=
trap 'rm -f /tmp/perf-$W.map /tmp/perf-$F.map /tmp/perf-$L.map /tmp/perf-$M.map; cleanup' EXIT
run_bg env JIT_MEMFD=1 "$T/jit" 30 "$NAME" late JIT:grown >"$T/memfd.out"
M=${CHILDREN[-1]}
for _ in $(seq 1 100); do grep -q ready "$T/memfd.out" 2>/dev/null && break; sleep 0.05; done
grep -q "/memfd:jit" "/proc/$M/maps" || fail "the JIT code is not in a memfd"
start_profd --rate 499 --bucket 1s --pid "$M"
L=$M late_window 2s
before=$(sum_matching "$T/late.folded" "(^|;)\[memfd:jit[^;]*\](;| |$)")
echo "memfd, no perf map yet: $before of $(total_samples "$T/late.folded") samples unnamed"
[ "$before" -gt 0 ] || fail "no unnamed memfd samples before the map: $(heaviest "$T/late.folded" 3)"
kill -USR1 "$M"
sleep 2.2
L=$M late_window 1s
ctl dump --pid "$M" -o "$T/memfd_all.folded" || fail "dump of $M"
unnamed=$(sum_matching "$T/memfd_all.folded" "(^|;)\[memfd:jit[^;]*\](;| |$)")
named=$(sum_matching "$T/memfd_all.folded" "(^|;)$NAME(;| |$)")
echo "memfd, whole recording: $named named $NAME, $unnamed unnamed, of $(total_samples "$T/memfd_all.folded")"
[ "$unnamed" = 0 ] && [ "$named" -ge $((before + 100)) ] ||
	fail "memfd: $named named, $unnamed unnamed: $(heaviest "$T/memfd_all.folded" 3)"
ok "JIT code in a memfd: named by a map written late, the samples before it too"
stop_profd

# A jitdump instead of a perf map (CPython's -X perf_jit, the JVM's and
# Node's agents): the code is named from its load record.  The same file
# owned by another user is refused, as a perf map is.
trap 'rm -f /tmp/perf-$W.map /tmp/perf-$F.map /tmp/perf-$L.map /tmp/perf-$M.map /tmp/jit-$D.dump /tmp/jit-$X.dump; cleanup' EXIT
run_bg "$T/jit" 30 JIT:from_jitdump jitdump >"$T/dump.out"
D=${CHILDREN[-1]}
run_bg "$T/jit" 30 JIT:forged jitdump >"$T/forged.out"
X=${CHILDREN[-1]}
for _ in $(seq 1 100); do grep -q ready "$T/dump.out" && grep -q ready "$T/forged.out" && break; sleep 0.05; done
[ -s "/tmp/jit-$D.dump" ] && [ -s "/tmp/jit-$X.dump" ] || fail "no jitdump written"
grep -q "jit-$D.dump" "/proc/$D/maps" || fail "the jitdump is not mapped, as the format asks"
chown nobody "/tmp/jit-$X.dump"
start_profd --rate 499 --bucket 1s --pid "$D" --pid "$X"
L=$D late_window 2s
named=$(sum_matching "$T/late.folded" "(^|;)JIT:from_jitdump(;| |$)")
echo "jitdump: $named of $(total_samples "$T/late.folded") samples named JIT:from_jitdump"
[ $((named * 100)) -ge $(($(total_samples "$T/late.folded") * 95)) ] ||
	fail "the JIT frame is not named from the jitdump: $(heaviest "$T/late.folded" 3)"
ok "a jitdump names the JIT code"
L=$X late_window 2s
forged=$(sum_matching "$T/late.folded" "(^|;)JIT:forged(;| |$)")
[ "$forged" = 0 ] || fail "a jitdump owned by another user named $forged samples"
[ "$(stat_of perf_maps_refused)" -ge 1 ] || fail "perf_maps_refused is $(stat_of perf_maps_refused)"
ok "a jitdump owned by another user: refused (perf_maps_refused $(stat_of perf_maps_refused))"
stop_profd
echo "PASS test_jit_unwind"
