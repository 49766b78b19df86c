# GPU driver calls without a GPU: pseudo-terminal slaves stand in for
# /dev/nvidiactl, /dev/nvidia-uvm and /dev/kfd (watched with
# --gpu-device PATH=CLASS, so each is decoded with that driver's table),
# a Python program makes known numbers of ioctls and polls on them from
# known lines, and profd must count each call once, under the right
# command name and the calling Python line, with the poll time measured.
# PROFD_TEST_GPU_HOOK (auto, the default, uprobe or tracepoint) picks how
# the syscalls are hooked (test_gpu_ioctl_tracepoint.sh runs the
# tracepoints, which every system call pays for).
. "$(dirname "$0")/lib.sh"

SCRIPT=$SRC/tests/workloads/gpu_ioctl.py
line_of() { grep -n -- "$1" "$SCRIPT" | head -1 | cut -d: -f1; }
PY=$(command -v python3) || fail "python3 missing (a dependency)"

run_bg "$PY" "$SCRIPT" "$T"
APP=${CHILDREN[-1]}
for i in $(seq 1 100); do [ -f "$T/ptys" ] && break; sleep 0.05; done
[ -f "$T/ptys" ] || fail "workload did not start"
mapfile -t PTY < "$T/ptys"
NV=${PTY[0]} UVM=${PTY[1]} KFD=${PTY[2]} GEN=${PTY[3]}

HOOK=${PROFD_TEST_GPU_HOOK:-auto}
start_profd --gpu-device "$NV=nvidia" --gpu-device "$UVM=uvm" --gpu-device "$KFD=kfd" \
	--gpu-device "$GEN" --gpu-syscall-hook "$HOOK"
ctl stats > "$T/stats0" || fail "stats failed"
grep -q '^gpu_devices_watched *4$' "$T/stats0" || { cat "$T/stats0" >&2; fail "4 devices not watched"; }
touch "$T/go"
for i in $(seq 1 200); do [ -f "$T/done" ] && break; sleep 0.05; done
[ -f "$T/done" ] || fail "workload did not finish"
sleep 0.5 # let profd drain the ring

ctl dump --pid "$APP" --type gpu-driver-calls --python-only -o "$T/calls.folded" ||
	fail "dump gpu-driver-calls failed"
ctl dump --pid "$APP" --type gpu-driver --python-only -o "$T/time.folded" || fail "dump gpu-driver failed"
ctl stats > "$T/stats"
sed 's/^/  calls: /' "$T/calls.folded"

# count FUNC LEAF: calls from the Python function FUNC (at its marked
# line, through call()) whose leaf frame is LEAF.
count() {
	local l; l=$(line_of "# L:$1")
	awk -v pre="$1 \\\\($SCRIPT:$l\\\\);" -v leaf=";$2" '{
		n = $NF; $NF = ""; sub(/ $/, "")
		if ($0 ~ pre && substr($0, length($0) - length(leaf) + 1) == leaf) s += n
	} END { print s + 0 }' "$T/calls.folded"
}
expect() {
	local got; got=$(count "$1" "$2")
	[ "$got" = "$3" ] || fail "$1 -> $2: $got calls, expected $3"
	ok "$1 -> $2: $got calls"
}

expect nv_alloc NV_ESC_RM_ALLOC 7
expect nv_alloc_other_size NV_ESC_RM_ALLOC 3 # by command number, not the size bits
expect nv_control_xfer NV_ESC_RM_CONTROL 5   # the XFER wrapper unwrapped
expect uvm_map UVM_MAP_EXTERNAL_ALLOCATION 6
expect kfd_wait AMDKFD_IOC_WAIT_EVENTS 8
expect generic "ioctl 0x2b on $GEN" 2
expect poll_wait "poll on $NV" 10
grep -q 'nv_wrong_type' "$T/calls.folded" && fail "an ioctl of another type on the NVIDIA device was traced"
grep -q 'unwatched' "$T/calls.folded" && fail "an ioctl on an unwatched device was traced"
total=$(total_samples "$T/calls.folded")
[ "$total" = 41 ] || fail "$total calls in all, expected 41"
ok "41 calls in all, none on the unwatched device or of the wrong type"

# The whole stack: <module> -> main -> the function -> call() -> command.
l_mod=$(grep -n '^    main(sys.argv\[1\])' "$SCRIPT" | cut -d: -f1)
grep -qE "^<module> \\($SCRIPT:$l_mod\\);main \\($SCRIPT:[0-9]+\\);kfd_wait \\($SCRIPT:[0-9]+\\);call \\($SCRIPT:[0-9]+\\);AMDKFD_IOC_WAIT_EVENTS 8\$" \
	"$T/calls.folded" || fail "no complete Python stack for AMDKFD_IOC_WAIT_EVENTS"
ok "complete Python stacks"

# 10 polls of 50 ms: 500 ms +- 15%.
poll_ns=$(sum_matching "$T/time.folded" ";poll on $NV ")
awk -v t="$poll_ns" 'BEGIN { exit !(t >= 425e6 && t <= 575e6) }' ||
	fail "poll time $poll_ns ns, expected 500 ms +- 15%"
ok "poll time $((poll_ns / 1000000)) ms (10 x 50 ms)"
ioctl_ns=$(sum_matching "$T/time.folded" ";NV_ESC_RM_ALLOC ")
[ "$ioctl_ns" -gt 0 ] || fail "no time for the ioctls"

grep -q '^bpf_gpu_ioctls *31$' "$T/stats" || fail "bpf_gpu_ioctls is not 31"
grep -q '^bpf_gpu_polls *10$' "$T/stats" || fail "bpf_gpu_polls is not 10"
grep -qE '^gpu_events_aggregated *41$' "$T/stats" || { grep gpu_ "$T/stats" >&2; fail "gpu_events_aggregated is not 41"; }

# Native frames too (no --python-only): fcntl's ioctl in libc.
ctl dump --pid "$APP" --type gpu-driver-calls -o "$T/native.folded" || fail "dump failed"
grep -qE 'ioctl;AMDKFD_IOC_WAIT_EVENTS [0-9]+$' "$T/native.folded" ||
	{ grep AMDKFD "$T/native.folded" >&2; fail "no libc ioctl frame under the command"; }
ok "native stacks end in libc's ioctl"

# Which hook ran: the one asked for; auto is fentry where the kernel
# takes BPF trampolines, else uprobes on the C library (profd logged why).
hook_is() { awk -v k="gpu_syscall_hook_$1" '$1 == k { print $2 }' "$T/stats"; }
in_use=
for h in fentry uprobe tracepoint; do
	[ "$(hook_is $h)" = 1 ] && in_use="$in_use$h"
done
case $HOOK:$in_use in
tracepoint:tracepoint) ok "syscalls hooked by the raw tracepoints, as asked" ;;
uprobe:uprobe) ok "syscalls hooked by uprobes on the C library, as asked" ;;
auto:fentry) ok "syscalls hooked by fentry/fexit" ;;
auto:uprobe) why='fexit cannot attach\|no kernel BTF\|again with uprobes'
	grep -q "$why" "$T/profd.err" || fail "uprobes in use but profd did not say why fentry was not"
	ok "syscalls hooked by uprobes on the C library: $(grep -m1 "$why" "$T/profd.err")" ;;
*) fail "hook $HOOK: in use '$in_use' ($(grep gpu_syscall_hook "$T/stats" | tr '\n' ' '))" ;;
esac
if [ "$in_use" = uprobe ]; then
	n=$(awk '$1 == "gpu_libc_uprobes" { print $2 }' "$T/stats")
	[ "${n:-0}" -ge 4 ] || fail "uprobe hook with $n probes on C libraries"
fi

# What other system calls pay: the run counts of profd's GPU programs
# (exact, from BPF run statistics) over N getppid() calls.  The
# tracepoints run twice for each; fentry and uprobes never (what runs
# then is other programs' ioctls and polls during the loop, far fewer).
N=200000
runs=$(python3 "$SRC/tests/e2e/bpf_runs.py" "$PROFD_PID" on_gpu_ "$WORKLOADS/syscall_loop" $N) ||
	fail "counting BPF program runs failed"
if [ "$in_use" = tracepoint ]; then
	[ "$runs" -ge $((2 * N)) ] || fail "tracepoint hook: $runs runs for $N getppid calls, expected >= $((2 * N))"
	ok "tracepoint hook: the GPU programs ran $runs times for $N getppid calls"
else
	[ "$runs" -lt $((N / 20)) ] || fail "$in_use hook: the GPU programs ran $runs times for $N getppid calls"
	ok "$in_use hook: the GPU programs ran $runs times for $N getppid calls (other system calls untraced)"
fi

stop_profd
echo "PASS test_gpu_ioctl ($HOOK)"
