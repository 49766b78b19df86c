#!/bin/sh
# sanitize.suite: the unit, BPF and fuzz tests and the daemon under a set
# of end-to-end tests (below), built with ASan+UBSan by clang (so the
# fuzzers' smoke runs come along) in BUILD/asan.  Every
# sanitizer report fails it: the instrumented programs stop at the first
# error (halt_on_error, abort_on_error, UBSan without recovery) and also
# write each report to a file, so a report from a background daemon or a
# child whose exit status no test looks at is still caught at the end.
# Usage: sanitize.sh SOURCE_DIR OUT_DIR [TEST_CC]  (TEST_CC: the compiler
# tests build their helper programs with, default cc, as in the plain run)
set -eu
src=$1 out=$2 test_cc=${3:-cc}
reports=$out/sanitizer-reports

command -v clang >/dev/null || { echo "SKIP: clang not found"; exit 77; }

cmake -S "$src" -B "$out" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
	-DPROFD_SANITIZE=ON -DPROFD_FUZZ=ON -DPROFD_TEST_CC="$test_cc" >"$out.configure.log" 2>&1 ||
	{ cat "$out.configure.log"; exit 1; }
cmake --build "$out" -j"$(nproc)" >"$out.build.log" 2>&1 ||
	{ tail -n 50 "$out.build.log"; exit 1; }

rm -rf "$reports"
mkdir -p "$reports"
chmod 1777 "$reports" # tests run some programs as other users
common=halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_exe_name=1
export ASAN_OPTIONS="$common:detect_leaks=1:strict_string_checks=1:log_path=$reports/report"
export UBSAN_OPTIONS="$common:log_path=$reports/report"

# What runs: every unit, BPF and fuzz test (the parsers, the tables, the
# protocol: the code a sanitizer checks best), and the daemon itself under
# the end-to-end tests below, each for code of its own that the others
# do not reach.  The rest of e2e drives the same code again with other
# workloads or timings; under the sanitizers' 2-3x slowdown all of it
# took over 25 minutes, more than the suite's whole margin.
#   load            process-table churn, eviction, an exec storm, stats under load
#   hostile_clients silent, slow and malformed control clients
#   history rss_history  the SQLite history: write, prune, restore, query
#   profctl profctl_json formats gecko diff  every command and renderer
#   python python_threads  CPython detection, frame decoding, threads,
#                   C frames between Python ones (one interpreter per layout)
#   python_embed    libpython in a host that is not python
#   stacks_locals stacks_native stacks_stuck_memory  reads of a process's
#                   memory on request, one that blocks among them
#   offcpu memory mmap gpu_cuda  the non-CPU event types through ingest
#   push_otlp       a push encoder and its connection
#   jit_unwind      perf maps
#   record_cmd short_lived  a child profiled from its exec; a 60 ms process
#   paths_not_ours  files of the wrong kind where the socket and history go
# Timing-bound checks among them (first full stack within 1 s, splits
# over a few seconds; off-CPU's wall split, where a slower daemon's
# walk budget leaves blocks unwalked: 56.1% for 50.5%, seen) still run,
# but their verdict is not counted where the slowdown breaks them; any
# sanitizer report from them fails the run.
E2E="load hostile_clients history rss_history profctl profctl_json formats gecko diff
python python_threads python_embed stacks_locals stacks_native stacks_stuck_memory
offcpu memory mmap gpu_cuda push_otlp jit_unwind record_cmd short_lived paths_not_ours"
timing='python|gpu_cuda|short_lived|offcpu'
e2e_re=$(echo $E2E | tr ' ' '|')
export PROFD_TEST_PYTHON_SET=layouts
rc=0
ctest --test-dir "$out" --output-on-failure -R "^(unit|bpf|fuzz)\\.|^e2e\\.test_($e2e_re)\$" \
	-E "^e2e\\.test_($timing)\$" || rc=$?
ctest --test-dir "$out" --output-on-failure -R "^e2e\\.test_($timing)\$" ||
	echo "sanitize: latency-bound tests above failed under the sanitizers (not counted)"

found=0
for f in "$reports"/*; do
	[ -f "$f" ] || continue
	found=1
	echo "=== sanitizer report: $(basename "$f")"
	cat "$f"
done
if [ "$found" = 1 ]; then
	echo "FAIL: sanitizer reports above"
	exit 1
fi
exit "$rc"
