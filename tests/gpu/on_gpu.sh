#!/bin/bash
# on_gpu.sh [--release DIR] OUTDIR: profd on a real NVIDIA GPU, in one run
# of under 5 minutes, from an unpacked release (bin/profd, bin/profctl) or
# a build (BUILD=...).  profd runs with its GPU default (--gpu auto) while
# PyTorch trains an MLP, synchronizes after known kernels and allocates
# through its caching allocator (gpu_work.py); the cuda, cuda-calls,
# gpu-driver, gpu-driver-calls and cpu profiles of each are checked for
# the attributions, then the training step is timed with and without
# profd, interleaved.  OUTDIR gets at most 8 flat files (the device tool's
# limit): summary.txt checks.txt overhead.txt env.txt stats.txt profd.log
# profiles.tar.gz.  Exit 0 when every check passed.  Never waits unbounded.
set -u
REL=
[ "${1:-}" = --release ] && { REL=$(cd "$2" && pwd); shift 2; }
OUT=${1:?usage: on_gpu.sh [--release DIR] OUTDIR}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -n "$REL" ]; then PROFD=${PROFD:-$REL/bin/profd}; PROFCTL=${PROFCTL:-$REL/bin/profctl}
else PROFD=${PROFD:-$BUILD/profd}; PROFCTL=${PROFCTL:-$BUILD/profctl}; fi
PY=${PYTHON:-python3}
W=$(mktemp -d /tmp/on_gpu.XXXXXX)
SOCK=$W/profd.sock
PROFD_PID=
WORK="$HERE/gpu_work.py"
: >"$OUT/checks.txt"

log() { echo "on_gpu: $*" | tee -a "$OUT/summary.txt"; }
check() { # NAME OK? EVIDENCE
	local r=FAIL; [ "$2" = 1 ] && r=PASS
	echo "$r: $1 -- $3" | tee -a "$OUT/checks.txt"
}
ctl() { timeout 30 "$PROFCTL" --socket "$SOCK" "$@"; }

start_profd() { # LOGFILE [profd options]
	local logf=$1
	shift
	rm -f "$SOCK"
	"$PROFD" --all-processes --config /dev/null --state-dir "$W/state" --socket "$SOCK" "$@" \
		>>"$logf" 2>&1 &
	PROFD_PID=$!
	local i
	for i in $(seq 1 300); do
		ctl stats >/dev/null 2>&1 && return 0
		kill -0 "$PROFD_PID" 2>/dev/null || { PROFD_PID=; return 1; }
		sleep 0.2
	done
	return 1
}
stop_profd() {
	[ -n "$PROFD_PID" ] || return 0
	kill -TERM "$PROFD_PID" 2>/dev/null
	timeout 20 tail --pid="$PROFD_PID" -f /dev/null; kill -9 "$PROFD_PID" 2>/dev/null
	PROFD_PID=
}
finish() {
	stop_profd
	(cd "$W" && tar czf "$OUT/profiles.tar.gz" --exclude=profd.sock . 2>/dev/null)
	rm -rf "$W"
}
trap finish EXIT

# 1. The machine.
{
	echo "== uname"; uname -a
	echo "== nvidia-smi"; timeout 20 nvidia-smi 2>&1
	echo "== driver"; cat /proc/driver/nvidia/version 2>&1
	echo "== torch"; timeout 60 "$PY" -c 'import torch,sys; print(sys.version); print(torch.__version__, torch.version.cuda, torch.cuda.is_available() and torch.cuda.get_device_name())' 2>&1
	echo "== devices"; ls -l /dev/nvidia* 2>&1; grep -i nvidia /proc/devices
	echo "== kernel"; ls -l /sys/kernel/btf/vmlinux 2>&1; ls /sys/bus/event_source/devices/ 2>&1
	grep -E 'tracefs|debugfs' /proc/mounts
	echo "== profd --check"; timeout 60 "$PROFD" --config /dev/null --check 2>&1
} >"$OUT/env.txt" 2>&1
log "environment in env.txt: $(grep -m1 'NVIDIA-SMI\|Driver Version' "$OUT/env.txt" | tr -s ' ')"

# run_work MODE SECONDS NAME: a workload in the background; sets WPID.
run_work() {
	rm -f "$W/$3.done"
	"$PY" "$WORK" "$1" "$2" "$W/$3.done" >"$W/$3.out" 2>&1 &
	WPID=$!
	local i
	for i in $(seq 1 600); do
		grep -qE '^(ready|skip)' "$W/$3.out" 2>/dev/null && return 0
		kill -0 "$WPID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
wait_work() { # NAME: until its step_ms line (bounded)
	local i
	for i in $(seq 1 900); do
		grep -q '^step_ms' "$W/$1.out" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
line_of() { grep -n "CHECK: $1\$" "$WORK" | cut -d: -f1; }
sum() { # FOLDED REGEX: the count of the stacks matching (0 without the file)
	[ -s "$1" ] || { echo 0; return; }
	awk -v re="$2" '{ n = $NF; $NF = ""; if ($0 ~ re) s += n } END { print s + 0 }' "$1"
}

# 2. profd with its defaults plus launches (--cuda-launches, so that they
# can be checked too), the three workloads, their profiles.
# GPU_ONLY=overhead: only part 4 (a second call that narrows the spread).
if [ "${GPU_ONLY:-}" = overhead ]; then
	log "checks skipped (GPU_ONLY=overhead)"
elif ! start_profd "$OUT/profd.log" --cuda-launches; then
	log "profd did not start: $(tail -3 "$OUT/profd.log" | tr '\n' ' ')"
	check "profd starts with --gpu auto" 0 "$(tail -1 "$OUT/profd.log")"
else
	check "profd starts with --gpu auto" 1 "$(grep -c . "$OUT/profd.log") log lines"
	ctl stats >"$W/stats.before"
	for wl in train sync alloc compile; do
		if ! run_work "$wl" 8 "$wl"; then
			log "$wl did not start: $(tail -3 "$W/$wl.out" | tr '\n' ' ')"; continue
		fi
		if grep -q '^skip' "$W/$wl.out"; then
			log "$wl: $(grep -m1 '^skip' "$W/$wl.out")"; wait "$WPID" 2>/dev/null; continue
		fi
		wait_work "$wl" || log "$wl: no step time"
		for t in cuda cuda-calls gpu-driver gpu-driver-calls cpu; do
			ctl dump --pid "$WPID" -t "$t" -o "$W/$wl.$t.folded" 2>>"$W/$wl.dump.err"
		done
		touch "$W/$wl.done"; wait "$WPID" 2>/dev/null
		log "$wl: $(grep step_ms "$W/$wl.out"), $(cat "$W"/$wl.*.folded 2>/dev/null | wc -l) folded lines"
	done
	ctl stats >"$W/stats.after"; ctl list >"$W/list.txt" 2>&1
	cp "$W/stats.after" "$OUT/stats.txt"

	# 3. The attributions.
	S=$(basename "$WORK")
	f=$W/train.cuda-calls.folded
	n=$(sum "$f" "train \\([^)]*$S:$(line_of train-sync)\\);")
	check "loss.item() (line $(line_of train-sync)) carries CUDA calls" "$([ "$n" -gt 0 ] && echo 1)" "$n calls under it; top: $(awk '{ print $NF "\t" $0 }' "$f" 2>/dev/null | sort -n | tail -1 | cut -f2- | cut -c1-300)"
	n=$(sum "$f" "(cudaMemcpy|cuMemcpy|Synchronize)[^;]*$")
	check "synchronizations/memcpys seen in training" "$([ "$n" -gt 0 ] && echo 1)" "$n"
	n=$(sum "$W/sync.cuda-calls.folded" "sync \\([^)]*$S:$(line_of sync-sync)\\);.*Synchronize")
	check "torch.cuda.synchronize() (line $(line_of sync-sync)) is a synchronize call" "$([ "$n" -gt 0 ] && echo 1)" "$n"
	# A launch's leaf is "kernel NAME"; "kernel [heap]" or "[anon]" is a
	# launch whose kernel could not be named.
	named=$(sum "$f" "LaunchKernel[^;]*;kernel [^[]")
	all=$(sum "$f" "LaunchKernel[^;]*;kernel ")
	check "launches named by kernel" "$([ "$named" -gt 0 ] && [ $((named * 2)) -ge "$all" ] && echo 1)" "$named of $all launches named; leaves: $(grep -oE 'LaunchKernel[^;]*;kernel [^ ]+' "$f" | sort | uniq -c | sort -rn | head -4 | tr '\n' ' ')"
	# Kernel names by where they come from (CUDA 13: handles, not stubs):
	# PyTorch's own kernels through the runtime, cuBLAS's through
	# cuLaunchKernelEx, Triton's through cuModuleGetFunction.
	kernels() { grep -ohE ';kernel [^;]*$' "$@" 2>/dev/null | sed 's/ [0-9]*$//' | sort | uniq -c | sort -rn | head -3 | cut -c1-160 | tr '\n' ' '; }
	n=$(sum "$f" "LaunchKernel[^;]*;kernel [^;]*(at::native|aten|elementwise)")
	check "PyTorch launches name aten/elementwise kernels" "$([ "$n" -gt 0 ] && echo 1)" "$n launches; top kernels: $(kernels "$f")"
	g=$W/sync.cuda-calls.folded
	n=$(sum "$g" "LaunchKernel[^;]*;kernel [^;]*([Gg]emm|nvjet|xmma|cutlass)")
	check "cuBLAS matmuls name a gemm kernel" "$([ "$n" -gt 0 ] && echo 1)" "$n launches; top kernels: $(kernels "$g")"
	h=$W/compile.cuda-calls.folded
	if grep -q '^skip' "$W/compile.out" 2>/dev/null; then
		log "Triton kernel names not checked: $(grep -m1 '^skip' "$W/compile.out" | cut -c1-200)"
	else
		n=$(sum "$h" "compiled \\([^)]*$S:$(line_of compile-call)\\);.*LaunchKernel[^;]*;kernel triton_")
		check "torch.compile's Triton kernels named (line $(line_of compile-call))" "$([ "$n" -gt 0 ] && echo 1)" "$n launches; top kernels: $(kernels "$h")"
	fi
	bad=$(cat "$W"/*.cuda-calls.folded 2>/dev/null | grep -cE ';kernel \[(heap|anon)')
	check "no launch named by an address (kernel [heap]/[anon])" "$([ "$bad" = 0 ] && [ "$all" -gt 0 ] && echo 1)" "$bad stacks; unnamed: $(sum "$f" ';kernel \[made before profd\]') of the training's launches made before profd"
	n=$(cat "$W"/*.gpu-driver-calls.folded 2>/dev/null | grep -cE 'NV_ESC_RM_|UVM_')
	check "driver ioctls decoded (NV_ESC_RM_*, UVM_*)" "$([ "${n:-0}" -gt 0 ] && echo 1)" "$n stacks; names: $(cat "$W"/*.gpu-driver-calls.folded 2>/dev/null | grep -oE '(NV_ESC_RM_|UVM_|NV_ESC_)[A-Z0-9_]+' | sort | uniq -c | sort -rn | head -6 | tr '\n' ' ')"
	n=$(sum "$W/alloc.cuda-calls.folded" "alloc \\([^)]*$S:($(line_of alloc-malloc)|$(line_of alloc-free))\\);.*(Malloc|MemAlloc|Free)")
	check "cudaMalloc/cudaFree under the allocating lines" "$([ "$n" -gt 0 ] && echo 1)" "$n"
	bad=$(cat "$W"/*.cuda-calls.folded 2>/dev/null | grep -E "$S:[0-9]+\\);(.*;)?\\[unknown\\];.*(cuda|cu)[A-Z]" | head -2)
	seen=$(cat "$W"/*.cuda-calls.folded 2>/dev/null | grep -c "$S:")
	check "no [unknown] between the Python line and the CUDA call" "$([ -z "$bad" ] && [ "$seen" -gt 0 ] && echo 1)" "${bad:-none} ($seen stacks with a workload line)"
	stop_profd
fi

# 4. Overhead: the training step without profd, with its defaults and
# with --cuda-launches, interleaved over GPU_ROUNDS rounds (4: about 4
# minutes); each round's own ratios are compared, so that drift between
# rounds (clocks, other tenants) does not count as profd's.
: >"$OUT/overhead.txt"
for round in $(seq 1 "${GPU_ROUNDS:-4}"); do
	for with in ${GPU_MODES:-no default launches}; do
		case $with in
		default) start_profd "$W/profd.overhead.log" ;;
		launches) start_profd "$W/profd.overhead.log" --cuda-launches ;;
		esac || { echo "round $round: profd did not start" >>"$OUT/overhead.txt"; continue; }
		run_work train 10 "ovh$round$with" && wait_work "ovh$round$with"
		touch "$W/ovh$round$with.done"; wait "$WPID" 2>/dev/null
		echo "round $round profd=$with $(grep step_ms "$W/ovh$round$with.out")" >>"$OUT/overhead.txt"
		stop_profd
	done
done
# Per round: default and --cuda-launches against that round's run
# without profd; then the mean of the rounds' ratios and their range.
awk '/step_ms/ { sub("round ", ""); r = $1; split($2, w, "="); t[r, w[2]] = $NF; rounds[r] = 1 }
	function add(m, v) { s[m] += v; c[m]++; if (c[m] == 1 || v < lo[m]) lo[m] = v; if (c[m] == 1 || v > hi[m]) hi[m] = v }
	END {
		for (r in rounds) {
			if (!((r, "no") in t) || t[r, "no"] <= 0) continue
			n++; a += t[r, "no"]; line = "round " r ":"
			if ((r, "default") in t) { v = 100 * (t[r, "default"] - t[r, "no"]) / t[r, "no"]; add("default", v); line = line sprintf(" default %+.2f%%", v) }
			if ((r, "launches") in t) { v = 100 * (t[r, "launches"] - t[r, "no"]) / t[r, "no"]; add("launches", v); line = line sprintf(" --cuda-launches %+.2f%%", v) }
			print line
		}
		if (!n) { print "overhead: no round completed"; exit }
		out = sprintf("step without profd %.3f ms (mean of %d rounds)", a / n, n)
		if (c["default"]) out = out sprintf("; default %+.2f%% (%d rounds %+.2f..%+.2f%%)", s["default"] / c["default"], c["default"], lo["default"], hi["default"])
		if (c["launches"]) out = out sprintf("; --cuda-launches %+.2f%% (%d rounds %+.2f..%+.2f%%)", s["launches"] / c["launches"], c["launches"], lo["launches"], hi["launches"])
		print out
	}' "$OUT/overhead.txt" | tee -a "$OUT/overhead.txt" "$OUT/summary.txt"
cat "$OUT/checks.txt" >>"$OUT/summary.txt"
! grep -q '^FAIL' "$OUT/checks.txt"
