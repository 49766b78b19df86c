# Python stacks of processes in their own pid and mount namespaces, as a
# container runs them: every CPython on the machine started under
# `unshare --pid --fork --mount-proc` BEFORE profd gets complete stacks
# with the right lines (their thread states record the namespace's tids),
# its threads each get their chain, and an interpreter run from a mount
# only its namespace sees is still found.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pythons.sh"

command -v unshare >/dev/null || fail "unshare (util-linux) is missing"
unshare --pid --fork --mount-proc true 2>/dev/null || skip "this machine refuses new pid/mount namespaces"

split_chain # SCRIPT, its chain's lines, complete_re (pythons.sh)

mapfile -t PYTHONS < <(list_pythons)
[ "${#PYTHONS[@]}" -gt 0 ] || fail "no CPython found (Debian's python3 is a dependency)"
echo "interpreters: ${PYTHONS[*]}"

# in_container CMD...: run CMD as pid 1 of new pid and mount namespaces;
# sets W to its pid as the host sees it.
in_container() {
	run_bg unshare --pid --fork --mount-proc --kill-child "$@"
	local u=${CHILDREN[-1]} i
	W=
	for i in $(seq 1 50); do
		W=$(pgrep -P "$u" | head -1)
		[ -n "$W" ] && return 0
		sleep 0.1
	done
	fail "no process inside the namespace of $u"
}

# sample_until PID FOLDED: dump PID's Python stacks once they number 2000
# (at least 3 s, at most 20 s): the split needs samples, and on a shared
# machine the workload may get a fraction of a CPU.
sample_until() {
	local i
	for i in $(seq 1 20); do
		sleep 1
		ctl dump --pid "$1" --python-only -o "$2" || fail "pid $1: dump failed"
		[ "$i" -ge 3 ] && [ "$(total_samples "$2")" -ge 2000 ] && break
	done
}

# check_complete NAME FOLDED [SECOND]: >= 99% complete stacks and the
# 75/25 split, in FOLDED or, where it is out of the band, in SECOND.
check_complete() {
	local total good heavy light pct share
	total=$(total_samples "$2")
	good=$(grep -E "$complete_re" "$2" | awk '{ s += $NF } END { print s + 0 }')
	[ "$total" -ge 300 ] || fail "$1: only $total samples"
	pct=$(awk -v g="$good" -v t="$total" 'BEGIN { printf "%.2f", 100 * g / t }')
	share=$(split_share "$2")
	echo "$1: $good/$total = $pct% complete; leaf_heavy $share% (true 75%)"
	awk -v p="$pct" 'BEGIN { exit !(p >= 99) }' || {
		grep -vE "$complete_re" "$2" | head -5 >&2
		fail "$1: only $pct% of samples have a complete stack"
	}
	split_ok "$share" && return 0
	[ -s "${3:-}" ] || fail "$1: split $share% not within 75 +- 3"
	split_ok "$(split_share "$3")" || fail "$1: split $share% not within 75 +- 3, nor the second window's"
}

for py in "${PYTHONS[@]}"; do
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	in_container "$py" "$SCRIPT" 30
	ONE=$W
	in_container "$py" "$SCRIPT" 30 3
	THREE=$W
	in_container "$py" "$SRC/tests/workloads/py_sorted.py" 30
	SORTED=$W
	[ "$(readlink /proc/$ONE/ns/pid)" != "$(readlink /proc/self/ns/pid)" ] || fail "python $ver: not in its own pid namespace"
	sleep 0.5 # well inside main() before profd starts
	# 1 s buckets: --since below then really leaves out the first
	# seconds (a bucket is the finest time a dump can select).
	start_profd --rate 999 --bucket 1s
	# The C frames come from unwind tables: the sorted() check reads the
	# seconds after they are ready: --since 2s reaches up to 3 s back in
	# whole 1 s buckets, and $SECONDS counts whole seconds.
	wait_unwind_ready "$SORTED"
	ready=$SECONDS
	sample_until "$ONE" "$T/one.folded"
	rm -f "$T/one2.folded"
	split_ok "$(split_share "$T/one.folded")" || split_second_window "$ONE" "$T/one2.folded" 4
	ctl dump --pid "$THREE" --by-thread --python-only -o "$T/three.folded" || fail "python $ver: dump --by-thread failed"
	while [ $((SECONDS - ready)) -lt 4 ]; do sleep 0.5; done
	ctl dump --pid "$SORTED" --since 2s -o "$T/sorted.folded" || fail "python $ver: sorted dump failed"
	stop_profd
	kill -KILL "$ONE" "$THREE" "$SORTED" 2>/dev/null
	# Mixed order: the C sort between the Python frames around it.
	keyed=$(sum_matching "$T/sorted.folded" ';slow_key \(')
	between=$(sum_matching "$T/sorted.folded" ';sort_them \([^;]*\)(;[^;(]+)+;slow_key \(')
	[ "$keyed" -gt 50 ] || fail "python $ver in a container: too few samples in slow_key ($keyed)"
	[ $((between * 100)) -ge $((keyed * 90)) ] || {
		grep ';slow_key (' "$T/sorted.folded" | grep -vE ';sort_them \([^;]*\)(;[^;(]+)+;slow_key \(' |
			awk '{ print $NF, $0 }' | sort -rn | head -3 | cut -c1-1200 >&2
		fail "python $ver in a container: C frames between the Python ones in $between of $keyed"
	}
	ok "python $ver in a container: sorted(): C frames between Python frames in $between of $keyed"
	check_complete "python $ver in a container" "$T/one.folded" "$T/one2.folded"
	n=$(grep -E ';main \(.*;mid \(.*;leaf_(heavy|light) \(' "$T/three.folded" | cut -d';' -f1 | sort -u | grep -c .)
	[ "$n" -ge 3 ] || fail "python $ver in a container: expected 3 threads with the chain, got $n"
	ok "python $ver in a container: complete stacks, $n threads with the chain"
done

# An interpreter the host cannot see at its path: a copy on a tmpfs
# mounted inside the namespace only.  Needs one without libpython beside
# it (Debian's static python3.11) whose standard library is where a copy
# looks for it (not sid's unpacked builds).
static=
for py in "${PYTHONS[@]}"; do
	case "$py" in */debian-pythons/*) continue ;; esac
	ldd "$py" 2>/dev/null | grep -q libpython || { static=$py; break; }
done
if [ -n "$static" ]; then
	mkdir -p "$T/private"
	in_container sh -c 'mount -t tmpfs none "$1" && cp "$2" "$1/python3" && exec "$1/python3" "$3" 30' \
		sh "$T/private" "$static" "$SCRIPT"
	for i in $(seq 1 100); do # until sh has copied and exec'd the interpreter
		exe=$(readlink "/proc/$W/exe")
		case "$exe" in "$T/private/"*) break ;; esac
		sleep 0.1
	done
	case "$exe" in "$T/private/"*) ;; *) fail "the private interpreter did not start ($exe)" ;; esac
	[ ! -e "$exe" ] || fail "the private interpreter $exe is visible on the host"
	sleep 0.5
	start_profd --rate 999
	sample_until "$W" "$T/private.folded"
	stop_profd
	kill -KILL "$W" 2>/dev/null
	check_complete "$static copied to a namespace-private mount ($exe)" "$T/private.folded"
	ok "interpreter on a namespace-private mount"
else
	echo "no interpreter without libpython: the private-mount case is not run"
fi
