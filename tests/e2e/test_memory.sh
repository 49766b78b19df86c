# --type memory: which Python function makes memory resident.  A workload
# writes a 300 MiB bytearray page by page in big_buffer() and keeps ~2M
# small strings from small_objects(), measuring the RSS each added (the
# truth).  The memory profile must attribute big_buffer within 10% of its
# bytes and the split between the two within 5 points, for Debian's
# python3.11 and one pyenv CPython; pprof's sample type is space/bytes, the
# SVG says MiB, `top --type memory` ranks big_buffer first, and `list`
# shows the workload's resident set.  Then once more under THP "always".
# PROFD_TEST_MEMORY_MIB sizes it (the kernel matrix's guests: 100, where
# TCG makes every page fault slow; the attribution checked is the same).
. "$(dirname "$0")/lib.sh"
: "${SRC:?SRC must point at the source directory}"
MIB=${PROFD_TEST_MEMORY_MIB:-300}
SMALL=$((MIB * 2000000 / 300))

pythons=()
[ -x /usr/bin/python3.11 ] && pythons+=(/usr/bin/python3.11)
for v in 3.13.0 3.12.1 3.11.7; do
	p=$HOME/.pyenv/versions/$v/bin/python3
	if [ -x "$p" ]; then pythons+=("$p"); break; fi
done
[ ${#pythons[@]} -gt 0 ] || skip "no CPython found"
start_profd --memory

check_python() {
	local py=$1 truth=$T/truth.$RANDOM pid i
	"$py" "$SRC/tests/workloads/py_memory.py" --truth "$truth" --big-mib "$MIB" --small "$SMALL" &
	pid=$!
	CHILDREN+=("$pid")
	for i in $(seq 1 120); do [ -s "$truth" ] && break; sleep 0.5; done
	[ -s "$truth" ] || fail "$py: the workload did not finish allocating"
	sleep 1.5 # its last events reach profd
	ctl dump --pid "$pid" --type memory -o "$T/m.folded" || fail "$py: dump --type memory failed"
	read -r big small split got_big got_small got_split < <(awk -v tf="$truth" '
		BEGIN { while ((getline l < tf) > 0) { split(l, a, " "); t[a[1]] = a[2] } }
		/big_buffer/ { b += $NF } /small_objects/ { s += $NF }
		END { printf "%d %d %.1f %d %d %.1f\n", t["big_buffer"], t["small_objects"],
			100 * t["big_buffer"] / (t["big_buffer"] + t["small_objects"]),
			b, s, (b + s) ? 100 * b / (b + s) : 0 }' "$T/m.folded")
	echo "$py: big_buffer $((got_big >> 20)) MiB (true $((big >> 20)) MiB)," \
		"small_objects $((got_small >> 20)) MiB (true $((small >> 20)) MiB)," \
		"split $got_split% (true $split%)"
	awk -v g="$got_big" -v t="$big" 'BEGIN { exit !(g >= 0.9 * t && g <= 1.1 * t) }' ||
		fail "$py: big_buffer has $got_big bytes, true $big (10% allowed)"
	awk -v g="$got_split" -v t="$split" 'BEGIN { d = g - t; exit !(d <= 5 && d >= -5) }' ||
		fail "$py: split $got_split%, true $split% (5 points allowed)"
	LAST_PID=$pid
}
for py in "${pythons[@]}"; do
	check_python "$py"
	ok "$py: bytes attributed to the right functions"
done

ctl dump --pid "$LAST_PID" --type memory -f pprof -o "$T/m.pb.gz" || fail "pprof dump failed"
if command -v go >/dev/null; then
	raw=$(go tool pprof -raw "$T/m.pb.gz" 2>&1) || fail "go tool pprof -raw: $raw"
	grep -q "space/bytes" <<<"$raw" || fail "pprof sample type is not space/bytes: $(head -5 <<<"$raw")"
	ok "pprof: sample type space/bytes"
fi
ctl dump --pid "$LAST_PID" --type memory -f svg -o "$T/m.svg" || fail "svg dump failed"
grep -q "MiB" "$T/m.svg" || fail "the memory SVG does not say MiB"
top=$(ctl top --pid "$LAST_PID" --type memory --python-only --once -n 40) || fail "top --type memory failed"
grep -q "TOTAL(MiB)" <<<"$top" || fail "top does not show MiB: $top"
grep -m1 -E "big_buffer|small_objects" <<<"$top" | grep -q big_buffer ||
	fail "top --type memory should rank big_buffer above small_objects: $top"
ok "svg in MiB, top --type memory"

# list: a live process's resident set now, as its /proc/PID/status says.
vm=$(awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$LAST_PID/status")
listed=$(ctl --json list | grep "\"pid\": $LAST_PID," | sed -nE 's/.*"rss_bytes": ([0-9]+).*/\1/p')
table=$(ctl list | awk -v p="$LAST_PID" '$1 == p { print $3 }')
echo "list: pid $LAST_PID rss_bytes $listed, RSS_MIB $table; /proc VmRSS $vm bytes"
[ -n "$listed" ] || fail "list --json has no rss_bytes for pid $LAST_PID"
awk -v g="$listed" -v t="$vm" -v m="$MIB" 'BEGIN { exit !(g >= 0.9 * t && g <= 1.1 * t && g >= m * 1048576) }' ||
	fail "list: rss_bytes $listed, VmRSS $vm (10% allowed, >= $MIB MiB kept)"
awk -v m="$table" -v k="$MIB" 'BEGIN { exit !(m + 0 >= k) }' || fail "list: RSS_MIB '$table' for pid $LAST_PID"
ok "list: RSS of the live workload ($((listed >> 20)) MiB)"

# Under THP "always" (Debian's and RHEL's kernels' default) one fault maps
# 2 MiB: the huge-page program must weigh it so (it once read 1 of 300 MiB).
THP=/sys/kernel/mm/transparent_hugepage/enabled
if [ -w "$THP" ] && grep -qw always "$THP"; then
	thp_was=$(sed -nE 's/.*\[([a-z]+)\].*/\1/p' "$THP")
	trap 'echo "$thp_was" >"$THP"; cleanup' EXIT
	echo always >"$THP"
	check_python "${pythons[0]}"
	echo "$thp_was" >"$THP"
	huge=$(ctl stats | awk '$1 == "bpf_memory_huge_pages" { print $2 }')
	[ "${huge:-0}" -gt 0 ] || fail "THP always: no huge page counted (bpf_memory_huge_pages '$huge')"
	ok "THP always: bytes attributed the same ($huge huge pages counted)"
else
	echo "THP: $THP not writable here, the huge-page case not run"
fi
stop_profd
