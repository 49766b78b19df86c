# Memory profiles over time: `dump --type memory --since` covers only its
# window, and `diff` of two memory dumps shows the function that grew.  A
# C workload makes 120 MiB resident in grow_early over 3 s, rests 3 s,
# then 120 MiB in grow_late.  A window starting in the rest must give
# grow_late its bytes (within 10%) and grow_early almost none; the diff
# of a dump taken after the first phase and one after the second (raw
# counts) must draw grow_late red and grow_early grey.
. "$(dirname "$0")/lib.sh"

truth=$T/truth
"$WORKLOADS/mem_phases" "$truth" "$T/go" &
pid=$!
CHILDREN+=("$pid")
# For it alone, 1 s buckets so a window's edge is within a second.
start_profd --memory --pid "$pid" --bucket 1s
sleep 1
touch "$T/go"
bytes() { awk -v f="$2" '$0 ~ ("(^|;)" f "(;| )") { s += $NF } END { printf "%d", s }' "$1"; }
wait_mark() { for i in $(seq 1 200); do grep -q "^$1 " "$truth" 2>/dev/null && return; sleep 0.1; done
	fail "the workload did not finish its $1 phase"; }

wait_mark early
t_early=$(date +%s.%N)
sleep 1 # its last events reach profd
ctl dump --pid "$pid" --type memory -o "$T/before.folded" || fail "dump after the first phase failed"
wait_mark late
sleep 1
ctl dump --pid "$pid" --type memory -o "$T/after.folded" || fail "dump after the second phase failed"
early=$(awk '$1 == "early" { print $2 }' "$truth")
late=$(awk '$1 == "late" { print $2 }' "$truth")

# The window from 1.5 s after the first phase ended: the rest and grow_late.
since=$(awk -v t="$t_early" -v now="$(date +%s.%N)" 'BEGIN { printf "%d", now - t - 1.5 }')
ctl dump --pid "$pid" --type memory --since "${since}s" -o "$T/win.folded" || fail "dump --since failed"
w_early=$(bytes "$T/win.folded" grow_early)
w_late=$(bytes "$T/win.folded" grow_late)
a_early=$(bytes "$T/after.folded" grow_early)
echo "last ${since}s: grow_late $((w_late >> 20)) MiB (true $((late >> 20))), grow_early $((w_early >> 20)) MiB" \
	"(all time: $((a_early >> 20)) of $((early >> 20)) MiB)"
awk -v g="$w_late" -v t="$late" 'BEGIN { exit !(g >= 0.9 * t && g <= 1.1 * t) }' ||
	fail "the window gives grow_late $w_late bytes, true $late (10% allowed)"
awk -v g="$w_early" -v t="$early" 'BEGIN { exit !(g <= 0.05 * t) }' ||
	fail "the window still has $w_early bytes of grow_early (made resident before it)"
awk -v g="$a_early" -v t="$early" 'BEGIN { exit !(g >= 0.9 * t && g <= 1.1 * t) }' ||
	fail "all time gives grow_early $a_early bytes, true $early (10% allowed)"
ok "--since: only the window's growth"

"$PROFCTL" diff --absolute "$T/before.folded" "$T/after.folded" -o "$T/diff.svg" 2>"$T/err" ||
	fail "profctl diff failed: $(cat "$T/err")"
# frame NAME -> its fill colour as red | blue | grey | other
colour_of() {
	local hex
	hex=$(awk -v name="$1" '/<title>/ { t = $0; sub(/.*<title>/, "", t) }
		t == name && /fill="#/ { f = $0; sub(/.*fill="#/, "", f); print substr(f, 1, 6); exit }' "$T/diff.svg")
	[ -n "$hex" ] || { echo missing; return; }
	local r=$((16#${hex:0:2})) g=$((16#${hex:2:2})) b=$((16#${hex:4:2}))
	if [ $r = $g ] && [ $g = $b ]; then echo grey
	elif [ $r -gt $b ] && [ $r -gt $g ]; then echo red
	elif [ $b -gt $r ] && [ $b -gt $g ]; then echo blue
	else echo other; fi
}
[ "$(colour_of grow_late)" = red ] || fail "grow_late is $(colour_of grow_late) in the diff, want red"
[ "$(colour_of grow_early)" = grey ] || fail "grow_early is $(colour_of grow_early) in the diff, want grey"
ok "diff of two memory dumps: grow_late red, grow_early grey"
stop_profd
