# Deep Python stacks, for every CPython on the machine, each started
# before profd (start-up imports are not the stacks under test): a
# 200-deep call chain comes whole, with its lines; a 300-deep one keeps
# its root side (<module>, main and the outer calls, the same frames in
# every sample) and says where it was cut, and the cut is counted in
# profctl stats.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pythons.sh"

SCRIPT=$SRC/tests/workloads/py_deep.py
L_MODULE=$(line_of '# called from <module>')
L_MAIN=$(line_of '^    descend(depth, time.monotonic')
L_CALL=$(line_of '# the recursive call')
L_LOOP=$(line_of 'while time.monotonic() < end:')
L_LEAF=$(line_of '# innermost: the leaf work')
KEEP=256 # Python frames profd keeps (PROFD_MAX_PY_FRAMES)
CUT='\[python frames cut: stack too deep\]'

root="^<module> \\($SCRIPT:$L_MODULE\\);main \\($SCRIPT:$L_MAIN\\)"
call=";descend \\($SCRIPT:$L_CALL\\)"
# depth 200: module, main, 200 calls, the innermost descend, maybe spin.
whole_re="$root($call){200};descend \\($SCRIPT:($L_LOOP|$L_LEAF)\\)(;spin \\($SCRIPT:[0-9]+\\))? [0-9]+\$"
# depth 300 (304 frames): the outermost KEEP, then the mark.
cut_re="$root($call){$((KEEP - 2))};$CUT [0-9]+\$"

pct() { awk -v g="$1" -v t="$2" 'BEGIN { printf "%.2f", t ? 100 * g / t : 0 }'; }
at_least_99() { awk -v p="$1" 'BEGIN { exit !(p >= 99) }'; }

mapfile -t PYTHONS < <(list_pythons)
[ "${#PYTHONS[@]}" -gt 0 ] || fail "no CPython found (Debian's python3 is a dependency)"
for py in "${PYTHONS[@]}"; do
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	run_bg "$py" "$SCRIPT" 30 200
	A=${CHILDREN[-1]}
	run_bg "$py" "$SCRIPT" 30 300
	B=${CHILDREN[-1]}
	sleep 1 # inside the recursion before profd starts
	start_profd --rate 999
	sleep 3
	ctl dump --pid "$A" --python-only -o "$T/d200.folded" || fail "python $ver: dump failed"
	ctl dump --pid "$B" --python-only -o "$T/d300.folded" || fail "python $ver: dump failed"
	cut=$(stat_of bpf_python_stack_truncated)
	stop_profd
	kill "$A" "$B"; wait "$A" "$B" 2>/dev/null

	total=$(total_samples "$T/d200.folded")
	good=$(grep -E "$whole_re" "$T/d200.folded" | awk '{ s += $NF } END { print s + 0 }')
	[ "$total" -ge 150 ] || fail "python $ver: only $total samples at depth 200"
	p=$(pct "$good" "$total")
	echo "python $ver: depth 200: $good/$total = $p% whole stacks with the right lines"
	at_least_99 "$p" || { grep -vE "$whole_re" "$T/d200.folded" | head -3 | cut -c1-400 >&2; fail "python $ver: depth 200: only $p% whole"; }
	! grep -qE "$CUT" "$T/d200.folded" || fail "python $ver: a 200-deep stack was marked cut"

	total=$(total_samples "$T/d300.folded")
	rooted=$(sum_matching "$T/d300.folded" "$root;")
	good=$(grep -E "$cut_re" "$T/d300.folded" | awk '{ s += $NF } END { print s + 0 }')
	[ "$total" -ge 150 ] || fail "python $ver: only $total samples at depth 300"
	p=$(pct "$rooted" "$total")
	q=$(pct "$good" "$total")
	echo "python $ver: depth 300: <module> at the root in $rooted/$total = $p%; the $KEEP outermost frames then the cut mark in $q%"
	at_least_99 "$p" || { grep -vE "$root;" "$T/d300.folded" | head -3 | cut -c1-400 >&2; fail "python $ver: depth 300: root in only $p%"; }
	at_least_99 "$q" || { grep -vE "$cut_re" "$T/d300.folded" | head -3 | cut -c1-400 >&2; fail "python $ver: depth 300: cut stacks wrong in $((100 - ${q%.*}))%"; }
	[ "$cut" -ge "$good" ] || fail "python $ver: profctl stats counted $cut cut stacks for $good samples"
	echo "python $ver: profctl stats: bpf_python_stack_truncated $cut"
	ok "python $ver: deep stacks keep their root"
done
# The boundary: depth KEEP - 4 is module, main, KEEP - 3 descend and spin,
# exactly KEEP frames: whole.  Depth KEEP - 2 has KEEP + 1 frames even
# outside spin: cut at the leaf.
run_bg "${PYTHONS[0]}" "$SCRIPT" 30 $((KEEP - 4))
A=${CHILDREN[-1]}
run_bg "${PYTHONS[0]}" "$SCRIPT" 30 $((KEEP - 2))
B=${CHILDREN[-1]}
sleep 1
start_profd --rate 999
sleep 3
ctl dump --pid "$A" --python-only -o "$T/keep.folded" || fail "dump failed"
ctl dump --pid "$B" --python-only -o "$T/over.folded" || fail "dump failed"
stop_profd
kill "$A" "$B"; wait "$A" "$B" 2>/dev/null
keep_re="$root($call){$((KEEP - 4))};descend \\($SCRIPT:($L_LOOP|$L_LEAF)\\)(;spin \\($SCRIPT:[0-9]+\\))? [0-9]+\$"
total=$(total_samples "$T/keep.folded")
p=$(pct "$(grep -E "$keep_re" "$T/keep.folded" | awk '{ s += $NF } END { print s + 0 }')" "$total")
total2=$(total_samples "$T/over.folded")
q=$(pct "$(sum_matching "$T/over.folded" "$root;.*;$CUT *\$")" "$total2")
echo "boundary: up to $KEEP frames whole in $p% of $total samples; $((KEEP + 1))+ frames cut, root kept, in $q% of $total2"
at_least_99 "$p" || { grep -vE "$keep_re" "$T/keep.folded" | head -3 | cut -c1-300 >&2; fail "a stack of exactly $KEEP frames did not come whole"; }
at_least_99 "$q" || fail "a stack of $((KEEP + 1)) frames was not cut at its leaf"
ok "boundary at $KEEP frames"

# The native frames around the cut Python ones: in the whole-process
# view <module> is still in every sample, below the cut mark, and the
# stacks start at the process's own root frame or, where the native walk
# lost its root (its figures are its own: bpf_unwind_trunc_*), at
# <module>.
run_bg "${PYTHONS[0]}" "$SCRIPT" 30 300
B=${CHILDREN[-1]}
sleep 1
start_profd --rate 999
sleep 3
ctl dump --pid "$B" -o "$T/mixed.folded" || fail "mixed dump failed"
stop_profd
kill "$B"; wait "$B" 2>/dev/null
total=$(total_samples "$T/mixed.folded")
[ "$total" -ge 150 ] || fail "mixed view: only $total samples"
p=$(pct "$(sum_matching "$T/mixed.folded" "(^|;)<module> \\([^;]*\\);main \\([^;]*\\)(;[^;]*)*;$CUT")" "$total")
awk '{ n = $NF; $NF = ""; split($0, f, ";"); r[f[1]] += n } END { for (k in r) print r[k], k }' "$T/mixed.folded" |
	sort -rn >"$T/roots"
read -r top name <"$T/roots"
py_root=$(awk '$2 == "<module>" { s += $1 } END { print s + 0 }' "$T/roots")
q=$(pct $((top + py_root)) "$total")
echo "mixed view: <module> then the cut mark in $p% of $total samples; root $name in $top, <module> in $py_root ($q%)"
at_least_99 "$p" || fail "mixed view: <module> or the cut mark missing in $((100 - ${p%.*}))%"
at_least_99 "$q" || { head -5 "$T/roots" >&2; fail "mixed view: only $q% of samples start at the root"; }
ok "mixed native/Python view keeps its root"
