#!/bin/bash
# guest_suite.sh: the end-to-end tests the kernel matrix runs inside each
# guest kernel (kernel_boot.sh SUITE tests/kernels/guest_suite.sh).  Runs
# on any machine: BUILD (default: SRC/build) and SRC (default: this
# checkout) as for tests/e2e.  One line per test, then a summary; exits
# non-zero if any failed.  GUEST_TESTS overrides the list.
#
# The subset covers what differs between kernels: CPU sampling with
# native and Python frames, off-CPU, memory, the GPU ioctl and CUDA
# stand-ins, history across restarts.  It is sized so that three guests
# fit in about 15 minutes under TCG on two cores (6.1, 2-core host:
# native_unwind 39 s, python 3, offcpu 21, memory 30, gpu_ioctl 23,
# gpu_cuda 44, history 67: 227 s plus a 7 s boot).
set -u

SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$SRC/build}
export SRC BUILD
# test_memory's workload at a third of its size: every page fault is slow
# under TCG, and what differs between kernels is how faults are seen.
export PROFD_TEST_MEMORY_MIB=${PROFD_TEST_MEMORY_MIB:-100}
TESTS=${GUEST_TESTS:-test_native_unwind test_python test_offcpu test_memory test_gpu_ioctl test_gpu_cuda test_history}

passed=0 failed=0 skipped=0
echo "guest_suite: kernel $(uname -r), build $BUILD"
# Debian's kernels make every mapping a transparent huge page candidate
# (THP "always"): the guests keep it, so the memory program's huge-page
# weighing is checked on each kernel (e2e.test_memory).
echo "guest_suite: THP $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)"
# What this kernel offers and refuses, as profd itself sees it (the
# README's requirements table is these lines, per kernel).
"$BUILD/profd" --config /dev/null --check 2>&1 | sed 's/^/guest_suite: check: /'
for t in $TESTS; do
	t0=$EPOCHREALTIME
	# Each test's whole output only on a failure or skip, to keep the
	# console short; its last lines say why.
	out=$(bash "$SRC/tests/e2e/$t.sh" 2>&1)
	rc=$?
	secs=$(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
	case $rc in
	0) res=pass; passed=$((passed + 1)) ;;
	77) res=skip; skipped=$((skipped + 1)) ;;
	*) res=fail; failed=$((failed + 1)) ;;
	esac
	# A pass shows what it measured (its "ok:" lines): the matrix's
	# figures per kernel.
	if [ "$res" = pass ]; then
		printf '%s\n' "$out" | grep '^ok: ' | cut -c1-200 | sed "s/^/  $t: /"
	else
		printf '%s\n' "$out" | tail -n 40 | sed "s/^/  $t: /"
	fi
	printf 'guest_suite: %-20s %s %6s s\n' "$t" "$res" "$secs"
done
echo "guest_suite: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
