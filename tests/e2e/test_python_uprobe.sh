# --python-uprobe: the eval-loop uprobe is attached through the descriptor
# profd opened and checked (/proc/self/fd/N of the file the process maps,
# see docs/security.md), and fires.  The swap attacks themselves are
# unit.test_procfile's.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pythons.sh"

mapfile -t PYTHONS < <(list_pythons)
[ "${#PYTHONS[@]}" -gt 0 ] || fail "no CPython found (Debian's python3 is a dependency)"
PY=$(readlink -f "${PYTHONS[0]}")
start_profd --rate 499 --python-uprobe

run_bg "$PY" "$SRC/tests/workloads/py_split.py" 3 2
W=${CHILDREN[-1]}
for i in $(seq 1 50); do
	[ "$(stat_of python_uprobes)" -ge 1 ] 2>/dev/null && [ "$(stat_of bpf_python_uprobe_hits)" -gt 0 ] 2>/dev/null && break
	sleep 0.1
done
probes=$(stat_of python_uprobes)
hits=$(stat_of bpf_python_uprobe_hits)
echo "python_uprobes=$probes bpf_python_uprobe_hits=$hits"
[ "${probes:-0}" -ge 1 ] || fail "no eval-loop uprobe attached for $PY"
[ "${hits:-0}" -gt 0 ] || fail "the eval-loop uprobe attached through the descriptor never fired"
ok "eval-loop uprobe on $PY attached through its checked descriptor and fired $hits times"
grep -q "eval-loop uprobe.*failed" "$T/profd.err" && fail "a uprobe attach failed: $(grep 'eval-loop' "$T/profd.err" | head -1)"
ok "no failed attach"
