# CUDA entry points without a GPU: stub libcuda.so.1 and libcudart.so.12
# built here export the real names and sleep known times; cudart calls
# the driver API inside, as the real one does.  A C program started
# BEFORE profd and one started after it, and a Python program (ctypes)
# that loads its own copy of the libraries after profd is up, call them
# known numbers of times from known functions and lines.  profd must
# count each outermost call once (cudaLaunchKernel -> cuLaunchKernel is
# one call), name the kernel of a launch, and time the synchronizations.
. "$(dirname "$0")/lib.sh"

need_cuda_uprobes
GPU=$SRC/tests/workloads/gpu
PY=$(command -v python3) || fail "python3 missing (a dependency)"
PYAPP=$GPU/gpu_app.py
line_of() { grep -n -- "$1" "$PYAPP" | head -1 | cut -d: -f1; }

build_cuda_stubs "$T/lib" || fail "building the stub libraries failed"
build_cuda_stubs "$T/lib2" || fail "building the second copy failed"
build_gpu_app "$T" || fail "building gpu_app failed"

# One C process before profd: found by the scan at start.
run_bg "$T/gpu_app" "$T/go.before" "$T/done.before"
BEFORE=${CHILDREN[-1]}
sleep 0.3
start_profd --gpu on --cuda-launches
ctl stats > "$T/stats0"
grep -qE '^cuda_uprobe_files +2$' "$T/stats0" ||
	{ grep cuda_ "$T/stats0" >&2; fail "the running process's CUDA libraries were not probed"; }
ok "libraries of a process started before profd probed"

# One C process after profd, on the same (already probed) files.  It
# calls once its unwind tables are ready (built at its exec): the stacks
# checked below are the walk's, not those of its first moments, when a
# file still being built ends the walk (docs/design/native-unwind.md).
run_bg "$T/gpu_app" "$T/go.after" "$T/done.after"
AFTER=${CHILDREN[-1]}
wait_unwind_ready "$AFTER"
touch "$T/go.before" "$T/go.after"

# Python after profd, on a copy nobody mapped yet: the mmap report must
# bring the probes before it starts calling.
mkdir -p "$T/py"
run_bg "$PY" "$PYAPP" "$T/lib2" "$T/py"
PYPID=${CHILDREN[-1]}
for i in $(seq 1 100); do [ -f "$T/py/loaded" ] && break; sleep 0.05; done
[ -f "$T/py/loaded" ] || fail "the Python program did not load the libraries"
for i in $(seq 1 100); do
	ctl stats | grep -qE '^cuda_uprobe_files +4$' && break
	sleep 0.05
done
ctl stats | grep -qE '^cuda_uprobe_files +4$' || fail "the copy mapped after start was not probed"
ok "libraries mapped after start probed"
touch "$T/py/go"

for f in "$T/done.before" "$T/done.after" "$T/py/done"; do
	for i in $(seq 1 300); do [ -f "$f" ] && break; sleep 0.05; done
	[ -f "$f" ] || fail "a workload did not finish ($f)"
done
sleep 0.5

# within_caller NS FLOOR CALLER: profd's time for the synchronizations
# is at least what the stub sleeps (nanosleep never returns early) and at
# most what the program timed around the same calls; more than 15% under
# that means time was lost.  The program's own figure, not a fixed one,
# is the ceiling: an emulated guest oversleeps by a fifth.
within_caller() {
	awk -v t="$1" -v floor="$2" -v caller="$3" 'BEGIN {
		exit !(caller > 0 && t >= floor * 0.999 && t <= caller * 1.001 + 1e6 && t >= caller * 0.85) }'
}

KERNEL='kernel vectorAdd(float const*, float const*, float*, int)'
# native_count FILE FRAMES: calls whose stack ends in exactly FRAMES.
ends_with() { awk -v tail="$2" '{ n = $NF; $NF = ""; sub(/ $/, "")
	if (substr($0, length($0) - length(tail) + 1) == tail) s += n } END { print s + 0 }' "$1"; }
expect_c() { # FILE FRAMES COUNT
	local got; got=$(ends_with "$1" "$2")
	[ "$got" = "$3" ] || { cat "$1" >&2; fail "$(basename "$1"): ...$2: $got calls, expected $3"; }
}

for who in BEFORE AFTER; do
	pid=${!who}
	ctl dump --pid "$pid" --type cuda-calls -o "$T/c.$who.folded" || fail "dump failed"
	expect_c "$T/c.$who.folded" ";main;launch_all;cudaLaunchKernel;$KERNEL" 40
	expect_c "$T/c.$who.folded" ";main;copy_all;cudaMalloc" 1
	expect_c "$T/c.$who.folded" ";main;copy_all;cudaMemcpy" 20
	# Its CUfunction was made by no call profd saw (a made-up handle).
	expect_c "$T/c.$who.folded" ";main;driver_launches;cuLaunchKernel;kernel [made before profd]" 15
	expect_c "$T/c.$who.folded" ";main;driver_syncs;cuCtxSynchronize" 50
	expect_c "$T/c.$who.folded" ";main;runtime_syncs;cudaDeviceSynchronize" 5
	total=$(total_samples "$T/c.$who.folded")
	[ "$total" = 131 ] || { cat "$T/c.$who.folded" >&2; fail "$who: $total calls, expected 131 (nested calls counted?)"; }
	ctl dump --pid "$pid" --type cuda -o "$T/t.$who.folded" || fail "dump failed"
	sync_ns=$(sum_matching "$T/t.$who.folded" ";driver_syncs;cuCtxSynchronize ")
	within_caller "$sync_ns" 1.0e9 "$(cat "$T/done.${who,,}")" ||
		fail "$who: cuCtxSynchronize time $sync_ns ns, expected 50 x 20 ms = 1.0 s at least and at most the $(cat "$T/done.${who,,}") ns the program timed"
	ok "C program started $who profd: 131 calls, no double counting, cuCtxSynchronize $((sync_ns / 1000000)) ms (timed by the program: $(($(cat "$T/done.${who,,}") / 1000000)) ms)"
done

ctl dump --pid "$PYPID" --type cuda-calls --python-only -o "$T/py.folded" || fail "dump failed"
sed 's/^/  py: /' "$T/py.folded"
L_MOD=$(line_of '# L:module') L_LAUNCH=$(line_of '# L:launch') L_SYNC=$(line_of '# L:sync')
L_STREAM=$(line_of '# L:stream')
pyline() { # FUNC LINE LEAF COUNT
	local want="<module> ($PYAPP:$L_MOD);main ($PYAPP:"
	local got
	got=$(awk -v pre="$want" -v mid=");$1 ($PYAPP:$2);$3" '{ n = $NF; $NF = ""; sub(/ $/, "")
		if (index($0, pre) == 1 && substr($0, length($0) - length(mid) + 1) == mid) s += n
	} END { print s + 0 }' "$T/py.folded")
	[ "$got" = "$4" ] || fail "python: $1 line $2 -> $3: $got calls, expected $4"
}
pyline launch_all "$L_LAUNCH" "cudaLaunchKernel;$KERNEL" 30
pyline sync_all "$L_SYNC" cudaDeviceSynchronize 25
pyline stream_syncs "$L_STREAM" cuStreamSynchronize 12
total=$(total_samples "$T/py.folded")
[ "$total" = 67 ] || fail "python: $total calls, expected 67"
ctl dump --pid "$PYPID" --type cuda --python-only -o "$T/pyt.folded" || fail "dump failed"
sync_ns=$(sum_matching "$T/pyt.folded" ";cudaDeviceSynchronize ")
within_caller "$sync_ns" 0.5e9 "$(cat "$T/py/done")" ||
	fail "python: cudaDeviceSynchronize time $sync_ns ns, expected 25 x 20 ms = 500 ms at least and at most the $(cat "$T/py/done") ns the program timed"
ok "Python program: 67 calls on the right lines, cudaDeviceSynchronize $((sync_ns / 1000000)) ms (timed by the program: $(($(cat "$T/py/done") / 1000000)) ms)"

ctl dump --pid "$PYPID" --type cuda --format svg -o "$T/py.svg" || fail "svg dump failed"
for s in "launch_all ($PYAPP:$L_LAUNCH)" "sync_all ($PYAPP:$L_SYNC)" cudaLaunchKernel cudaDeviceSynchronize "kernel vectorAdd"; do
	grep -qF "$s" "$T/py.svg" || fail "the SVG lacks '$s'"
done
ok "SVG names the Python lines and the entry points"

ctl stats > "$T/stats"
grep -qE '^cuda_uprobe_failures +0$' "$T/stats" || fail "uprobe attach failures"
grep -qE '^bpf_cuda_nested_calls +[1-9]' "$T/stats" || fail "no nested call seen (cudart -> libcuda)"
stop_profd
echo "PASS test_gpu_cuda"
