# Counters that do not lie: a Python stack whose caller frame cannot be
# read (tests/workloads/py_readfail.py points its frame's caller link at
# unmapped memory while its leaf runs) is counted in
# bpf_python_read_failed (BPF also flags the sample's Python stack
# truncated), and the frames read before it are kept.
. "$(dirname "$0")/lib.sh"

PY=$(command -v python3) || fail "python3 missing (a dependency)"
"$PY" -c 'import sys; sys.exit(0 if sys.version_info[:2] in ((3, 11), (3, 12)) else 3)' ||
	skip "py_readfail.py knows the frame layout of CPython 3.11 and 3.12 only"

start_profd --rate 499
before=$(stat_of bpf_python_read_failed)
[ -n "$before" ] || fail "profctl stats has no bpf_python_read_failed"
"$PY" "$SRC/tests/workloads/py_readfail.py" 3 >"$T/readfail.out" &
W=$!
CHILDREN+=($W)
wait "$W" || fail "the workload failed: $(cat "$T/readfail.out")"
grep -q '^done$' "$T/readfail.out" || fail "the workload did not finish: $(cat "$T/readfail.out")"
sleep 1
after=$(stat_of bpf_python_read_failed)
echo "bpf_python_read_failed: $before -> $after"
[ "$after" -gt "$before" ] || fail "a Python frame that could not be read was not counted"
ok "unreadable Python frames counted: $((after - before))"
ctl dump --pid "$W" --python-only -o "$T/readfail.folded" || fail "dump failed"
grep -qE '(^|;)middle \([^;]*;leaf \(' "$T/readfail.folded" ||
	fail "the readable frames middle;leaf are missing: $(head -3 "$T/readfail.folded")"
ok "the frames before the unreadable one are kept"
grep -qE '^\[python outer frames missing\];middle \([^;]*;leaf \(' "$T/readfail.folded" ||
	fail "the stack without its outer frames is not marked at its root: $(grep middle "$T/readfail.folded" | head -2)"
ok "the missing outer frames are marked at the root"
