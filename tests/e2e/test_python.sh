# Python stacks for every CPython on the machine, each started BEFORE
# profd: complete stacks from <module> to the leaf with the right line
# numbers, found soon after start, and the known 75/25 split.  The time to
# the first complete stack is printed; its 1 s target is a performance
# figure, measured by bench/run (start-up), not asserted here, where one
# slow moment of a shared machine would fail the suite.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pythons.sh"

split_chain # SCRIPT, its chain's lines, complete_re (pythons.sh)

mapfile -t PYTHONS < <(list_pythons)
[ "${#PYTHONS[@]}" -gt 0 ] || fail "no CPython found (Debian's python3 is a dependency)"
echo "interpreters: ${PYTHONS[*]}"

for py in "${PYTHONS[@]}"; do
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	run_bg "$py" "$SCRIPT" 30
	W=${CHILDREN[-1]}
	sleep 0.5 # well inside main() before profd starts
	t0=$(date +%s%N)
	start_profd --rate 999 --bucket 1s # 1 s: a second window by --since
	# Time from profd's start to the first complete Python stack.
	found=
	for i in $(seq 1 100); do
		if ctl dump --pid "$W" --python-only -o "$T/first.folded" 2>/dev/null &&
			grep -qE "$complete_re" "$T/first.folded"; then
			found=$(( ($(date +%s%N) - t0) / 1000000 )); break
		fi
		sleep 0.05
	done
	[ -n "$found" ] || fail "python $ver: no complete Python stack within 5 s"
	sleep 3
	ctl dump --pid "$W" --python-only -o "$T/py.folded" || fail "python $ver: dump failed"
	total=$(total_samples "$T/py.folded")
	good=$(grep -E "$complete_re" "$T/py.folded" | awk '{ s += $NF } END { print s + 0 }')
	share=$(split_share "$T/py.folded")
	rm -f "$T/py2.folded"
	split_ok "$share" || split_second_window "$W" "$T/py2.folded" 3
	stop_profd
	kill "$W"; wait "$W" 2>/dev/null
	[ "$total" -ge 500 ] || fail "python $ver: only $total samples"
	pct=$(awk -v g="$good" -v t="$total" 'BEGIN { printf "%.2f", 100 * g / t }')
	echo "python $ver ($py): first complete stack after ${found} ms; $good/$total = $pct% complete; leaf_heavy $share% (true 75%)"
	awk -v p="$pct" 'BEGIN { exit !(p >= 99) }' || {
		grep -vE "$complete_re" "$T/py.folded" | head -5 >&2
		fail "python $ver: only $pct% of samples have a complete stack"
	}
	if ! split_ok "$share"; then
		split_ok "$(split_share "$T/py2.folded")" ||
			fail "python $ver: split $share% not within 75 +- 3, nor the second window's"
	fi
	ok "python $ver"
done
