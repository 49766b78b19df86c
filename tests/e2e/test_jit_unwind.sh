# Native stacks through JIT code: tests/workloads/jit copies a function
# built with frame pointers into anonymous executable memory, names it in
# /tmp/perf-PID.map, and calls it from main -> jit_a -> jit_b -> jit_c
# built without frame pointers.  The walk must cross the anonymous frame
# by its frame pointer and go on with the tables, so the callers up to
# main are still found, and the JIT frame must carry the perf map's name.
. "$(dirname "$0")/lib.sh"

CC=${CC:-cc}
SRCDIR=$SRC/tests/workloads/jit
NAME=JIT:hot_loop
$CC -O1 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-stack-protector -c \
	-o "$T/jitcode.o" "$SRCDIR/jitcode.c" || fail "building the JIT code"
$CC -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -o "$T/jit" "$SRCDIR/chain.c" \
	"$T/jitcode.o" || fail "building the program"
objdump -d "$T/jit" | grep -A3 -E '<jit_[abc]>:' | grep -q 'push *%rbp' &&
	fail "the callers have frame pointers"
objdump -d "$T/jit" | grep -A2 '<jit_code>:' | grep -q 'push *%rbp' ||
	fail "the JIT code has no frame pointer"

# The process and its JIT code first, so that profd --pid has its
# mapping list (with the anonymous mapping) before sampling starts.
run_bg "$T/jit" 10 "$NAME" > "$T/jit.out"
W=${CHILDREN[-1]}
trap 'rm -f /tmp/perf-$W.map; cleanup' EXIT
for i in $(seq 1 100); do grep -q ready "$T/jit.out" 2>/dev/null && break; sleep 0.05; done
grep -q ready "$T/jit.out" || fail "the workload did not start"
grep -q " $NAME\$" "/tmp/perf-$W.map" || fail "no perf map written"

start_profd --rate 499 --pid "$W"
sleep 5
ctl dump --pid "$W" -o "$T/jit.folded" || fail "dump failed"
ctl stats >"$T/stats"
# Kernel frames (an interrupt taken in the JIT code) may follow the leaf.
total=$(total_samples "$T/jit.folded")
jit=$(sum_matching "$T/jit.folded" "(^|;)$NAME(;| |$)")
full=$(sum_matching "$T/jit.folded" "^_start;__libc_start_main;__libc_start_call_main;main;jit_a;jit_b;jit_c;$NAME(;| |$)")
anon=$(awk '$1 == "bpf_unwind_walks_through_anon_code" { print $2 }' "$T/stats")
pct=$(awk -v f="$full" -v j="$jit" 'BEGIN { printf "%.1f", j ? 100 * f / j : 0 }')
echo "JIT leaf named $NAME in $jit/$total samples; $full ($pct%) of them reach _start..main" \
	"through jit_a;jit_b;jit_c; bpf_unwind_walks_through_anon_code $anon"
[ "$total" -ge 500 ] || fail "only $total samples"
[ $((jit * 100)) -ge $((total * 80)) ] ||
	{ sort -k2 -rn "$T/jit.folded" | head -5 >&2; fail "the JIT frame is not named from the perf map"; }
ok "the JIT frame is named from the perf map"
awk -v p="$pct" 'BEGIN { exit !(p >= 90) }' ||
	{ awk '{ print $NF, $0 }' "$T/jit.folded" | sort -rn | head -5 >&2; fail "only $pct% of JIT samples reach main"; }
ok "callers through JIT code: $pct% reach main"
[ "${anon:-0}" -gt 0 ] || fail "bpf_unwind_walks_through_anon_code is ${anon:-missing}"
# Nothing made up: no user frame between jit_c and the JIT code, none
# after it (it is the leaf: only kernel frames may follow).
bad=$(awk -v name="$NAME" '{
	n = $NF; $NF = ""; sub(/ $/, ""); k = split($0, f, ";")
	for (i = 1; i <= k && f[i] != name; i++) ;
	if (i > k) next
	if (i < 2 || (f[i - 1] != "jit_c" && f[i - 1] !~ /^\[/)) { s += n; next }
	for (j = i + 1; j <= k; j++) if (f[j] !~ /_\[k\]$/) { s += n; next }
} END { print s + 0 }' "$T/jit.folded")
[ "$bad" = 0 ] || fail "$bad samples with frames around the JIT frame that are not there"
ok "no invented frames around the JIT frame"

stop_profd
echo "PASS test_jit_unwind"
