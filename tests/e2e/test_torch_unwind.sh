# Native stacks of a PyTorch training step (Debian's python3-torch, CPU,
# 4 intra-op threads): ~300 files, 5.8 million unwind rows, libtorch_cpu
# alone 1.4 million.  Between the Python line and the BLAS leaf every
# native frame must come from the tables: at most 5% of the training
# step's samples may hold a frame-pointer guess ([anon], [heap], [stack],
# [unknown]), >= 90% of the backward pass's native samples must pass
# through THPEngine_run_backward (libtorch_python, the Python -> C++ edge
# perf --call-graph dwarf shows), and >= 90% of those in sgemm_ must reach
# libtorch_python on the way up.  Skips only without python3-torch.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
"$PY" -c 'import torch' 2>/dev/null || fail "python3-torch is missing (packaging/setup.sh installs it)"

start_profd --rate 199
run_bg "$PY" "$SRC/tests/workloads/py_torch_train.py" 180 >"$T/train.out"
W=${CHILDREN[-1]}

# Seconds of building for PyTorch's tables do not hold up another
# process's: one started meanwhile has its unwind entry within 2 s (the
# PyTorch build yields every 100 ms when others wait).
pending() { ctl stats | awk '$1 == "unwind_tables_pending" { print $2 }'; }
# One reading decides: the count falls as tables are built and rises at
# each dlopen, so a second reading may already be under the bar.
p=0
for _ in $(seq 1 1200); do p=$(pending); [ "${p:-0}" -gt 30 ] && break; kill -0 "$W" || fail "training died"; sleep 0.1; done
[ "${p:-0}" -gt 30 ] || fail "PyTorch's tables were never pending (unwind_tables_pending at most ${p:-?})"
run_bg "$WORKLOADS/cpu_split" 30
C=${CHILDREN[-1]}
t0=$(date +%s%N)
until has_unwind_entry "$C" || [ $(($(date +%s%N) - t0)) -ge 2000000000 ]; do sleep 0.02; done
t1=$(date +%s%N)
has_unwind_entry "$C" && [ $((t1 - t0)) -lt 2000000000 ] ||
	fail "a process started while PyTorch's tables were built had no unwind entry after 2 s"
echo "a process started while $(pending) PyTorch tables were pending: its unwind entry after $(((t1 - t0) / 1000000)) ms"
kill "$C"
ok "another process's tables do not wait for PyTorch's"

for _ in $(seq 1 120); do grep -q ready "$T/train.out" && break; kill -0 "$W" || fail "training died"; sleep 1; done
grep -q ready "$T/train.out" || fail "torch did not start within 120 s"
# The ~300 tables are built once the process is first sampled and after
# each dlopen (seconds for libtorch_cpu, longer on a loaded machine).  The
# process's mapping list is published at once with the tables built so
# far, its other files as pending (a walk stops there), and again as the
# rest come.  The steady state: the process has its entry in profd's
# unwind_procs map (bpftool), no table is pending, and neither a table was
# built nor a walk met unknown code for 3 s.
# "tables built, unknown walks, tables pending", from one stats answer.
progress() {
	ctl stats | awk '$1 == "unwind_tables_built" { b = $2 } $1 == "bpf_unwind_trunc_unknown" { u = $2 }
		$1 == "unwind_tables_pending" { p = $2 } END { print b, u, p }'
}
prev=$(progress); still=0
for _ in $(seq 1 120); do
	sleep 1
	now=$(progress)
	if [ "$now" = "$prev" ] && [ "${now##* }" = 0 ] && has_unwind_entry "$W"; then still=$((still + 1)); else still=0; prev=$now; fi
	[ "$still" -ge 3 ] && break
done
[ "$still" -ge 3 ] || fail "no steady state within 120 s (tables still being built, or no unwind entry for $W)"
sleep 10
kill -0 "$W" || fail "training ended before the samples were taken"
ctl dump --pid "$W" --since 10s -o "$T/t.folded" || fail "dump failed"
ctl stats >"$T/stats.txt"
grep -E "^(bpf_)?unwind_(table_bytes|tables_refused|tables_evicted|tables_given_way|rows|files_with|calls|complete|trunc|no_proc|stale|refreshes)|^user_stacks_by_frame_pointers" "$T/stats.txt"

# One stack a line, count last.  Python frames are "name (file:line)".
awk -v out="$T" '
function has(re) { return stack ~ re }
{
	n = $NF; stack = $0; sub(/ [0-9]+$/, "", stack)
	if (!has("step \\([^;]*py_torch_train\\.py:")) next
	train += n
	if (has("(^|;)\\[(anon|heap|stack|unknown)[^;]*\\]")) { guess += n; if (guess_ex == "") guess_ex = stack }
	if (has("Tensor\\.backward \\(") && has("torch::autograd::Engine")) {
		bw += n
		if (has(";THPEngine_run_backward")) bw_ok += n
		else if (bw_ex == "") bw_ex = stack
	}
	if (has(";sgemm_")) {
		gemm += n
		if (has(";(THPEngine_run_backward|THPVariable_|\\[libtorch_python)")) gemm_ok += n
		else if (gemm_ex == "") gemm_ex = stack
	}
}
END {
	printf "train=%d guess=%d bw=%d bw_ok=%d gemm=%d gemm_ok=%d\n", train, guess, bw, bw_ok, gemm, gemm_ok > (out "/counts")
	printf "guess: %s\nbackward without THPEngine_run_backward: %s\nsgemm_ without libtorch_python: %s\n", guess_ex, bw_ex, gemm_ex > (out "/examples")
}' "$T/t.folded"
read -r counts <"$T/counts"
echo "$counts"
eval "$counts"
[ "$train" -ge 200 ] || fail "only $train samples of the training step in 10 s (199 Hz, 4 threads)"
[ "$gemm" -ge $((train / 10)) ] || fail "the BLAS leaf (sgemm_) is in only $gemm of $train samples"
[ "$bw" -ge 30 ] || fail "only $bw backward samples with autograd's engine"
sed 's/;/\n    /g' "$T/examples" | head -c 6000 >"$T/examples.txt"
[ $((guess * 100)) -le $((train * 5)) ] || { cat "$T/examples.txt" >&2; fail "$guess of $train training samples hold frame-pointer guesses"; }
[ $((bw_ok * 100)) -ge $((bw * 90)) ] || { cat "$T/examples.txt" >&2; fail "only $bw_ok of $bw backward samples pass THPEngine_run_backward"; }
[ $((gemm_ok * 100)) -ge $((gemm * 90)) ] || { grep ";sgemm_" "$T/t.folded" | grep -vE ";(THPEngine_run_backward|THPVariable_|\[libtorch_python)" | awk "{print \$NF, \$0}" | sort -rn | head -3 | cut -c1-1500 >&2; cat "$T/examples.txt" >&2; fail "only $gemm_ok of $gemm sgemm_ samples reach libtorch_python"; }
grep -qE '^unwind_tables_refused +0$' "$T/stats.txt" || echo "note: some tables refused (other processes on this machine)"
ok "torch: $guess/$train guessed, $bw_ok/$bw backward through THPEngine_run_backward, $gemm_ok/$gemm sgemm_ reach libtorch_python"
stop_profd
