# End to end: profd sampling the whole machine sees a frame-pointer C
# program's known call chain, in order, with its 75/25 split.  At 499 Hz
# (~2,500 samples in 5 s) the +- 3 points are 3.4 standard deviations of
# the sampling itself; at 199 Hz (~1,000) they were 2.2, and one run in
# thirty or so failed on chance alone (78.5% seen in CI).
. "$(dirname "$0")/lib.sh"

start_profd --all-processes --rate 499
# It runs well past the checks (killed at the end): `list` shows running
# processes, and a 6 s run had ended before a slow (sanitized) daemon's
# two dumps were done.
run_bg "$WORKLOADS/cpu_split" 60
W=${CHILDREN[-1]}
sleep 5
ctl dump --pid "$W" --format folded -o "$T/w.folded" || fail "dump failed"
ctl dump --pid "$W" --format svg -o "$T/w.svg" || fail "svg dump failed"

total=$(total_samples "$T/w.folded")
[ "$total" -ge 300 ] || fail "only $total samples for a busy 5 s process at 499 Hz"
heavy=$(sum_matching "$T/w.folded" '(^|;)main;run_workload;dispatch;leaf_heavy;spin( |;|$)')
light=$(sum_matching "$T/w.folded" '(^|;)main;run_workload;dispatch;leaf_light;spin( |;|$)')
chain=$((heavy + light))
echo "samples=$total heavy=$heavy light=$light"
[ $((chain * 100)) -ge $((total * 90)) ] || fail "only $chain of $total samples carry main;run_workload;dispatch;leaf_*;spin"
share=$(awk -v h="$heavy" -v l="$light" 'BEGIN { printf "%.1f", 100 * h / (h + l) }')
echo "leaf_heavy share: $share% (true split 75%)"
awk -v s="$share" 'BEGIN { exit !(s >= 72 && s <= 78) }' || fail "split $share% is not within 75 +- 3"
ok "chain in order, split $share%"

grep -q '<svg' "$T/w.svg" && grep -q 'leaf_heavy' "$T/w.svg" || fail "SVG lacks the frames"
ok "svg written ($(wc -c <"$T/w.svg") bytes)"

ctl list | grep -qE "^ *$W .*cpu_split" || fail "list does not show pid $W"
ctl --json list | grep -q "\"pid\": $W" || fail "list --json does not show pid $W"
ctl --json stats | grep -q '"samples_received"' || fail "stats --json lacks samples_received"
ok "list and stats"
stop_profd
ok "profd exited cleanly on SIGTERM"
