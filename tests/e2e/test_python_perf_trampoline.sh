# CPython 3.12+ run with -X perf calls every Python function through a
# perf trampoline: a copy of a tiny stub in anonymous memory (3.12 and 3.13
# on x86-64: no frame pointer), named py::FUNC:FILE in /tmp/perf-PID.map.
# -X perf_jit (3.13+) runs the same trampolines, named in a jitdump
# instead (/tmp/jit-PID.dump, written through a stdio buffer: on disk only
# as it fills).  The stacks of such a process read as without the flag:
# the walk crosses the trampolines down to the native root (_start), and
# neither they nor the calls -X perf adds between two Python functions
# show.
#
# For each interpreter whose trampoline is active, tests/workloads/py_split.py
# runs side by side with -X perf, with -X perf_jit where the interpreter
# has it, and without a flag; over the same seconds (--since, after all
# have their unwind tables), for each flag:
#   - >= 99% of the samples reach _start;
#   - no frame is a trampoline (py::, or [anon] where its name is not out);
#   - the heaviest stack is the same frames in the same order as without
#     the flag (lines aside);
#   - leaf_heavy's share of leaf_heavy + leaf_light is within 2 points of
#     the run without the flag.  About 3000 samples each (three processes
#     sharing the CPUs, 999 Hz): the difference of the two shares has a
#     standard deviation of about 1.1 points, so a window outside is
#     measured again, and the second window decides.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pythons.sh"

SCRIPT=$SRC/tests/workloads/py_split.py
WINDOW=6 # seconds of samples compared

# split_of PID SECONDS RUN: leaf_heavy's share and the share reaching
# _start (per mille) of PID's last SECONDS into ${RUN}_split_pm and
# ${RUN}_root_pm.
split_of() {
	local heavy light total
	ctl dump --pid "$1" --since "${2}s" -o "$T/again.folded" || fail "python $ver: dump failed"
	heavy=$(sum_matching "$T/again.folded" ';leaf_heavy \(')
	light=$(sum_matching "$T/again.folded" ';leaf_light \(')
	total=$(total_samples "$T/again.folded")
	[ $((heavy + light)) -gt 0 ] || fail "python $ver ($3): no sample in leaf_heavy or leaf_light"
	eval "${3}_split_pm=$((heavy * 1000 / (heavy + light)))"
	eval "${3}_root_pm=$(($(sum_matching "$T/again.folded" '^_start;') * 1000 / total))"
}

# Whether the trampoline is on; the probe's perf map or jitdump, which
# CPython leaves for perf to read after it, goes.
PROBE='import os, sys
print(sys.version_info >= (3, 12) and sys.is_stack_trampoline_active())
for f in ("/tmp/perf-%d.map", "/tmp/jit-%d.dump"):
    try:
        os.unlink(f % os.getpid())
    except OSError:
        pass'
# CPython leaves its perf map and jitdump behind: ours go.
trap 'cleanup; for p in "${CHILDREN[@]}"; do rm -f "/tmp/perf-$p.map" "/tmp/jit-$p.dump"; done' EXIT

mapfile -t PYTHONS < <(list_pythons)
start_profd --rate 999 --bucket 1s # 1 s buckets: --since is exact to a second
# check_run RUN FLAG: the ${RUN} process (python -X FLAG) against plain.
check_run() {
	local run=$1 flag=$2 tramp d root_pm split_pm
	eval "root_pm=\$${run}_root_pm split_pm=\$${run}_split_pm"
	echo "python $ver: -X $flag: $(eval echo "\$${run}_total") samples, root reached in $(pct "$root_pm")," \
		"leaf_heavy $(pct "$split_pm"); without: $plain_total samples, root $(pct "$plain_root_pm"), leaf_heavy $(pct "$plain_split_pm")"
	tramp=$(sum_matching "$T/$run.folded" '(^|;)py::')
	[ "$tramp" -eq 0 ] || {
		grep -m3 -E 'py::' "$T/$run.folded" | cut -c1-400 >&2
		fail "python $ver: -X $flag: $tramp samples show a perf trampoline frame (py::)"
	}
	# Unnamed (-X perf_jit's names still in CPython's buffer), a
	# trampoline is known by where it sits; one sampled on its own few
	# instructions, under a hook a stripped interpreter does not name,
	# stays [anon]: a sample in a thousand at the most.
	tramp=$(sum_matching "$T/$run.folded" '(^|;)\[anon\]')
	[ "$tramp" -gt 0 ] && grep -m3 -F '[anon]' "$T/$run.folded" | cut -c1-400 | sed 's/^/  [anon]: /'
	[ $((tramp * 1000)) -le "$(eval echo "\$${run}_total")" ] ||
		fail "python $ver: -X $flag: $tramp samples show an unnamed trampoline ([anon])"
	if [ "$root_pm" -lt 990 ]; then
		# A window with a transient (a trampoline arena mapped since
		# the maps were read) is measured again; the second decides.
		echo "python $ver: with -X $flag $(pct "$root_pm") of the samples reach _start: measured again; short stacks:"
		awk '!/^_start;/ { print $NF, $0 }' "$T/$run.folded" | sort -rn | head -3 | cut -c1-300 | sed 's/^/  /'
		sleep "$WINDOW"
		split_of "$(eval echo "\$${run}_pid")" "$WINDOW" "$run"
		eval "root_pm=\$${run}_root_pm"
		[ "$root_pm" -ge 990 ] || {
			awk '!/^_start;/ { print $NF, $0 }' "$T/again.folded" | sort -rn | head -5 | cut -c1-400 >&2
			fail "python $ver: with -X $flag only $(pct "$root_pm") of the samples reach _start, twice (>= 99% wanted)"
		}
	fi
	cmp -s "$T/$run.top" "$T/plain.top" || {
		echo "  with -X $flag: $(cat "$T/$run.top")" >&2
		echo "  without:      $(cat "$T/plain.top")" >&2
		fail "python $ver: the heaviest stack differs with -X $flag"
	}
	d=$((split_pm - plain_split_pm))
	if [ "${d#-}" -gt 20 ]; then
		# One window in about 14 is that far apart by chance: the
		# verdict is an independent second one's.
		echo "python $ver: leaf_heavy $(pct "$split_pm") with -X $flag, $(pct "$plain_split_pm") without: measured again"
		sleep "$WINDOW"
		split_of "$(eval echo "\$${run}_pid")" "$WINDOW" "$run" && split_of "$plain_pid" "$WINDOW" plain
		eval "split_pm=\$${run}_split_pm"
		d=$((split_pm - plain_split_pm))
		[ "${d#-}" -le 20 ] || fail "python $ver: leaf_heavy's share $(pct "$split_pm") with -X $flag, $(pct "$plain_split_pm") without: more than 2 points apart, twice"
	fi
}
pct() { printf '%d.%d%%' $(($1 / 10)) $(($1 % 10)); }

tested=0 jit_tested=0
for py in "${PYTHONS[@]}"; do
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
	active=$("$py" -X perf -c "$PROBE" 2>/dev/null)
	if [ "$active" != True ]; then
		case $ver in 3.9 | 3.10 | 3.11) ;; *) echo "python $ver ($py): no perf trampoline here, not tested" ;; esac
		continue
	fi
	# -X perf_jit (3.13+): the same trampolines, named in a jitdump.
	runs="perf plain"
	[ "$("$py" -X perf_jit -c "$PROBE" 2>/dev/null)" = True ] &&
		runs="perf jit plain"
	pids=()
	for run in $runs; do
		case $run in perf) flag=(-X perf) ;; jit) flag=(-X perf_jit) ;; *) flag=() ;; esac
		run_bg "$py" "${flag[@]}" "$SCRIPT" $((WINDOW * 2 + 90)) # killed once measured; long for slow guests
		eval "${run}_pid=${CHILDREN[-1]}"
		pids+=("${CHILDREN[-1]}")
	done
	wait_unwind_ready "${pids[@]}"
	sleep $((WINDOW + 1))
	for run in $runs; do
		f=$T/$run.folded
		ctl dump --pid "$(eval echo "\$${run}_pid")" --since "${WINDOW}s" -o "$f" || fail "python $ver: dump failed"
		total=$(total_samples "$f")
		[ "$total" -ge 1000 ] || fail "python $ver ($run): only $total samples"
		root=$(sum_matching "$f" '^_start;')
		heavy=$(sum_matching "$f" ';leaf_heavy \(')
		light=$(sum_matching "$f" ';leaf_light \(')
		[ $((heavy + light)) -gt 0 ] || fail "python $ver ($run): no sample in leaf_heavy or leaf_light"
		eval "${run}_total=$total ${run}_root_pm=$((root * 1000 / total)) ${run}_split_pm=$((heavy * 1000 / (heavy + light)))"
		# The heaviest stack's frames, lines and the leaf's native
		# callees left out.
		heaviest "$f" 1 | cut -f2 | sed -E 's/ [0-9]+$//; s/;spin \([^)]*\).*/;spin/; s/:[0-9]+\)/)/g' >"$T/$run.top"
	done
	check_run perf perf
	case $runs in *jit*) check_run jit perf_jit; jit_tested=$((jit_tested + 1)) ;; esac
	kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null
	tested=$((tested + 1))
done
[ "$tested" -gt 0 ] || skip "no CPython 3.12+ with an active perf trampoline (-X perf)"
ok "$tested interpreters: stacks through the perf trampolines read as without -X perf ($jit_tested also with -X perf_jit)"
