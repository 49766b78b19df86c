# Kernel launches named by their kernel, as CUDA 13 makes them:
#  - runtime launches of a program built here by the real nvcc and linked
#    to the real libcudart.so.13 pass a handle (a heap object of the
#    runtime on a real driver), not the host stub: profd names them from
#    the stub the launch is made from (at -O0 under the launch helper);
#  - driver launches (cuLaunchKernel(f), cuLaunchKernelEx(cfg, f)) of
#    handles from cuModuleGetFunction / cuLibraryGetKernel /
#    cuKernelGetFunction, through the stub libcuda.so.1: named where the
#    handle was made; an unloaded module's address reused by another
#    kernel takes that kernel's name.
# One copy of each program starts before profd and has launched each
# kernel once (its handle made) before profd is up; one starts after.
# No GPU and no driver: the real runtime's launches fail fast, but are
# made.
. "$(dirname "$0")/lib.sh"
SECONDS=0; tick() { echo "  [${SECONDS}s] $*"; }

CC=${CC:-cc}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
[ -x "$NVCC" ] || skip "no CUDA toolkit here ($NVCC): the test builds its program with nvcc"
need_cuda_uprobes
GPU=$SRC/tests/workloads/gpu
CUDA_LIB=$(cd "$(dirname "$NVCC")/.." && pwd)/lib64
[ -e "$CUDA_LIB/libcudart.so.13" ] || skip "the CUDA toolkit at $NVCC has no libcudart.so.13 (not CUDA 13)"

# -O0: the launch helper is a frame of its own between the stub and the
# runtime; -O2: the stub calls the runtime itself.
for opt in O0 O2; do
	"$NVCC" -cudart shared -$opt -g -Xcompiler -fno-omit-frame-pointer \
		-Xlinker -rpath="$CUDA_LIB" -o "$T/app_$opt" "$GPU/cuda13_app.cu" ||
		fail "nvcc could not build the CUDA 13 program (-$opt)"
done
build_cuda_stubs "$T/lib" || fail "building the stub libraries failed"
$CC -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -o "$T/drv" \
	"$GPU/cuda_driver_app.c" -L"$T/lib" -lcuda -Wl,-rpath,"$T/lib" ||
	fail "building cuda_driver_app failed"

tick "programs built"

# start NAME PROGRAM: run it with its ready/go/done files under $T/NAME.
start() {
	run_bg "$2" "$T/$1.ready" "$T/$1.go" "$T/$1.done"
	eval "PID_$1=${CHILDREN[-1]}"
}
wait_file() {
	local i
	for i in $(seq 1 600); do [ -f "$1" ] && return 0; sleep 0.05; done
	fail "$1 did not appear"
}

# Before profd: their handles are made and each kernel launched once.
start late_O2 "$T/app_O2"
start late_drv "$T/drv"
wait_file "$T/late_O2.ready"
wait_file "$T/late_drv.ready"
start_profd --gpu on --cuda-launches
tick "profd up"
start early_O0 "$T/app_O0"
start early_O2 "$T/app_O2"
start early_drv "$T/drv"
for w in early_O0 early_O2 early_drv; do wait_file "$T/$w.ready"; done
# shellcheck disable=SC2154
wait_unwind_ready "$PID_late_O2" "$PID_late_drv" "$PID_early_O0" "$PID_early_O2" "$PID_early_drv"
tick "unwind tables ready"
for w in late_O2 late_drv early_O0 early_O2 early_drv; do touch "$T/$w.go"; done
for w in late_O2 late_drv early_O0 early_O2 early_drv; do wait_file "$T/$w.done"; done
tick "programs done"

# count FILE REGEX: launches whose folded stack matches REGEX.
count() { awk -v re="$2" '{ n = $NF; s0 = $0; sub(/ [0-9]+$/, "", s0); if (s0 ~ re) s += n } END { printf "%.0f\n", s }' "$1"; }
expect() { # FILE REGEX COUNT WHAT
	local got; got=$(count "$1" "$2")
	[ "$got" = "$3" ] || { heaviest "$1" 12 >&2; fail "$4: $got launches match '$2', expected $3"; }
}
# The negative checks below see what they look for (the leaves this
# build no longer writes, as the one before wrote them).
printf 'main;run;cudaLaunchKernel;kernel [heap] 3\nmain;cuLaunchKernelEx;kernel [anon] 2\n' >"$T/neg.folded"
[ "$(count "$T/neg.folded" 'kernel \[(heap|anon)')" = 5 ] && [ "$(count "$T/neg.folded" ";kernel \[")" = 5 ] ||
	fail "the checks for unnamed launches miss them"
# Every dump must hold all its launches, or a count above is vacuous.
dump() { # NAME TOTAL: its cuda-calls profile once it has TOTAL calls
	local pid i f=$T/$1.folded
	pid=$(eval echo "\$PID_$1")
	for i in $(seq 1 100); do
		ctl dump --pid "$pid" --type cuda-calls -o "$f" || fail "dump of $1 failed"
		[ "$(total_samples "$f")" -ge "$2" ] && break
		sleep 0.1
	done
	[ "$(total_samples "$f")" = "$2" ] || { cat "$f" >&2; fail "$1: $(total_samples "$f") calls, expected $2"; }
}

VEC='kernel vecAdd\(float\*, int\)$'
SCALE='kernel void scale<float>\(float\*, float\)$'
CK='kernel c_kernel\(int\*\)$'
for w in early_O0 early_O2 late_O2; do
	# The first launches come before profd (late) or while the new
	# process's unwind tables are built (early): their leaves only.
	first=0; [ "${w%%_*}" = early ] && first=1
	dump "$w" $((21 + 3 * first))
	expect "$T/$w.folded" ";run_vecadd\\(int\\)[^;]*;.*cudaLaunchKernel;$VEC" 12 "$w"
	expect "$T/$w.folded" ";run_scale\\(int\\)[^;]*;.*cudaLaunchKernel;$SCALE" 6 "$w"
	expect "$T/$w.folded" ";run_c\\(int\\)[^;]*;.*cudaLaunchKernel;$CK" 3 "$w"
	expect "$T/$w.folded" "cudaLaunchKernel;$VEC" $((12 + first)) "$w"
	expect "$T/$w.folded" "cudaLaunchKernel;kernel " $((21 + 3 * first)) "$w"
	expect "$T/$w.folded" ";kernel \[" 0 "$w: a launch not named by its kernel"
	ok "$w: $((21 + 3 * first)) runtime launches, each named by its kernel"
done

ADD='kernel triton_poi_fused_add_0$'
GEMM='kernel void gemm_tile<128>\(float const\*, float\*\)$'
SUM='kernel triton_red_fused_sum_1$'
BEFORE='kernel \[made before profd\]$'
# drv_expect NAME FIRST ADD GEMM: what its launches name, the handles made
# before the module was unloaded named ADD and GEMM, or BEFORE.
drv_expect() {
	local f=$T/$1.folded
	dump "$1" $((26 + $2))
	expect "$f" ";launch_triton;launch;cuLaunchKernel;$3" 10 "$1"
	expect "$f" ";launch_ex;cuLaunchKernelEx;$4" 7 "$1: cuLaunchKernelEx (the function is its second argument)"
	expect "$f" ";launch_kernel_handle;launch;cuLaunchKernel;$4" 5 "$1: a CUkernel launched"
	expect "$f" ";launch_reloaded;launch;cuLaunchKernel;$SUM" 4 "$1: a handle made after an unload"
	expect "$f" 'kernel \[(heap|anon)' 0 "$1: a launch named by an address"
}
drv_expect early_drv 2 "$ADD" "$GEMM"
expect "$T/early_drv.folded" "cuLaunchKernel;$ADD" 11 early_drv
expect "$T/early_drv.folded" "cuLaunchKernel;$GEMM" 6 early_drv
expect "$T/early_drv.folded" ";kernel \[" 0 "early_drv: a launch not named by its kernel"
ok "driver launches of handles made while profd ran: named by the kernel each was made for"
drv_expect late_drv 0 "$BEFORE" "$BEFORE"
ok "handles made before profd: 'kernel [made before profd]'; a handle made after: named"
grep -qx reused "$T/early_drv.done" &&
	ok "an unloaded kernel's handle address, reused by another kernel, took the new name"

ctl stats > "$T/stats"
grep -E '^(cuda_kernel|bpf_cuda_kernel)' "$T/stats" | sed 's/^/  /'
[ "$(awk '$1 == "cuda_kernel_names_from_stub" { print $2 }' "$T/stats")" -ge 69 ] ||
	fail "fewer than the 69 runtime launches named from their stub"
[ "$(awk '$1 == "cuda_kernel_handle_events" { print $2 }' "$T/stats")" = 7 ] ||
	fail "not the 7 handle events made (5 by early_drv, 2 by late_drv after profd started)"
# All five exited: their tables are dropped.
for i in $(seq 1 100); do [ "$(stat_of cuda_kernel_handles)" = 0 ] && break; sleep 0.1; done
[ "$(stat_of cuda_kernel_handles)" = 0 ] || fail "kernel handles still kept after every process exited"
ok "handle tables dropped when their processes exited"
stop_profd
echo "PASS test_gpu_cuda13"
