# Native stacks without frame pointers, unwound in the kernel from
# .eh_frame: a -O2 -fomit-frame-pointer C program (through libc's qsort
# and a dlopen'ed library) and Debian's python3.11 reach main.  (A C
# function between Python frames: test_python_threads, per interpreter.)
. "$(dirname "$0")/lib.sh"

# On failure: the commonest root-most frames, to see where walks ended.
roots() { awk '{ n = $NF; split($0, f, ";"); r[f[1] ";" f[2] ";" f[3] ";" f[4]] += n } END { for (k in r) print r[k], k }' "$1" | sort -rn | head -5 >&2; }
build_nofp "$T" || fail "building the program and its library"
objdump -d "$T/nofp" | grep -A3 '<c3>:' | grep -q 'push *%rbp' && fail "the test program has frame pointers"

# The C library's frame that calls main: __libc_start_call_main, a local
# symbol named from libc's debug file.  What is checked here is the walk;
# in a slow guest that file may not be read yet (its address then).
START_CALL='(__libc_start_call_main|\[libc\.so\.6\+0x[0-9a-f]+\])'

# 1 s buckets, so that --since can leave out the program's first seconds:
# until the worker has built a process's tables, walks through a file
# still pending end there (docs/design/native-unwind.md says so; on a loaded machine the
# build takes seconds).  What is checked here is the walk once they exist:
# the last 2 s (whole buckets: up to 3) of the 4 after they are.
# The workloads outlive the wait for their tables (up to 60 s) and the
# window after it; they are killed at the end.  A 30 s run ended first
# in a 6.1 guest on a busy host: 2 samples of its exit were all it had.
start_profd --rate 499 --bucket 1s
run_bg "$T/nofp" "$T/libnofp.so" 120
W=${CHILDREN[-1]}
for _ in $(seq 1 100); do grep -q libnofp "/proc/$W/maps" && break; sleep 0.05; done # dlopen'ed
wait_unwind_ready "$W"
sleep 4
ctl dump --pid "$W" --since 2s -o "$T/c.folded" || fail "dump failed"
kill "$W"
ctl --json stats >"$T/stats.json"
total=$(total_samples "$T/c.folded")
main=$(sum_matching "$T/c.folded" "^_start;__libc_start_main;$START_CALL;main;")
chain=$(sum_matching "$T/c.folded" ';main;c1;c2;c3;c4;c5;c6;sort_step;(qsort|qsort_r|msort_with_tmp[^;]*)(;[^;]+)*;cmp;lib_entry;lib_spin')
pct=$(awk -v m="$main" -v t="$total" 'BEGIN { printf "%.1f", 100 * m / t }')
echo "C without frame pointers: $main/$total = $pct% reach _start..main; $chain through qsort -> cmp -> dlopen'ed lib_spin"
awk -v p="$pct" 'BEGIN { exit !(p >= 95) }' || {
	roots "$T/c.folded"
	grep -oE '"unwind_(build_ns_max|tables_built|tables_refused)": *[0-9]+' "$T/stats.json" >&2
	fail "only $pct% reach main"
}
[ "$chain" -gt $((total / 2)) ] || { heaviest "$T/c.folded" 3 >&2; fail "the qsort callback chain into the dlopen'ed library is missing"; }
ok "C: $pct% reach main"

PY=/usr/bin/python3.11
[ -x "$PY" ] || PY=$(command -v python3)
run_bg "$PY" "$SRC/tests/workloads/py_split.py" 120
P=${CHILDREN[-1]}
# As for the C program: the seconds after its tables are ready.
wait_unwind_ready "$P"
sleep 4
ctl dump --pid "$P" --since 2s -o "$T/py.folded" || fail "python dump failed"
kill "$P"
total=$(total_samples "$T/py.folded")
# Reaching main: libc's start code calls main (on Debian's build just a
# jump to Py_BytesMain) and on into Py_RunMain.
main=$(sum_matching "$T/py.folded" "(^|;)$START_CALL;(main;)?Py_BytesMain;Py_RunMain;")
mixed=$(sum_matching "$T/py.folded" ';Py_RunMain;([^;]*;)*<module> \(')
pct=$(awk -v m="$main" -v t="$total" 'BEGIN { printf "%.1f", 100 * m / t }')
echo "python ($PY): $main/$total = $pct% reach main through the interpreter; $mixed with <module> above Py_RunMain"
awk -v p="$pct" 'BEGIN { exit !(p >= 95) }' || { roots "$T/py.folded"; fail "only $pct% of python samples reach main"; }
[ $((mixed * 100)) -ge $((total * 90)) ] || fail "Python frames are not placed above the interpreter's native frames"
ok "python: $pct% reach main, Python frames in place"

stop_profd
