# The same program run again and again (an exec storm, a job's workers):
# each run is a new process with empty caches, but its frames are in the
# same file at the same offsets, so profd names them from its file-wide
# cache (fileframes.h) instead of looking up and demangling each again.
# Checked: every run's profile is right (the cache gives the right
# names), and the runs after the first are named mostly from the cache.
. "$(dirname "$0")/lib.sh"

RUNS=6
start_profd --all-processes --rate 499
"$WORKLOADS/cpu_split" 1.5 >/dev/null &
wait $!
sym1=$(stat_of user_frames_symbolized)
file1=$(stat_of user_frames_by_file)
pids=()
for i in $(seq 2 $RUNS); do
	"$WORKLOADS/cpu_split" 1.5 >/dev/null &
	pids+=($!)
	wait $!
done
sym=$(( $(stat_of user_frames_symbolized) - sym1 ))
file=$(( $(stat_of user_frames_by_file) - file1 ))
echo "first run: $sym1 user frames symbolized; runs 2-$RUNS: $sym symbolized, $file named from the file cache"
for p in "${pids[@]}"; do
	ctl dump --pid "$p" -o "$T/$p.folded" || fail "dump of run $p failed"
	total=$(total_samples "$T/$p.folded")
	heavy=$(sum_matching "$T/$p.folded" ';main;run_workload;dispatch;leaf_heavy;spin')
	light=$(sum_matching "$T/$p.folded" ';main;run_workload;dispatch;leaf_light;spin')
	[ "$total" -gt 200 ] || fail "run $p: only $total samples"
	pct=$(awk -v h="$heavy" -v l="$light" 'BEGIN { printf "%.1f", 100 * h / (h + l + 0.001) }')
	awk -v h="$heavy" -v l="$light" -v t="$total" -v p="$pct" \
		'BEGIN { exit !(h + l >= 0.9 * t && p >= 68 && p <= 82) }' || {
		heaviest "$T/$p.folded" 5 >&2
		fail "run $p: leaf_heavy $heavy, leaf_light $light of $total ($pct%, want 75%)"
	}
done
ok "each of runs 2-$RUNS named right (leaf_heavy ~75% of the split)"
# Each later run's own frames (_start, __libc_start_main,
# __libc_start_call_main, main, run_workload, dispatch, both leaves,
# spin: 9) come from the file cache.  (The symbolized count is the whole
# machine's: profctl, awk and the shell's new processes count there too.)
[ "$file" -ge $(( 9 * (RUNS - 1) )) ] || fail "only $file frames of $((RUNS - 1)) runs named from the file cache"
ok "runs 2-$RUNS: $file frames from the file cache, $sym looked up"
stop_profd
