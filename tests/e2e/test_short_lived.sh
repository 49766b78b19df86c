# Processes that live ~80 ms (a build step, a CLI, a test's child) are
# named like long ones: a young process's samples wake profd at once
# (sample.bpf.c, young_ns), so its maps, symbols and Python code objects
# are read while it runs, and an exited process keeps its maps for the
# samples still in the ring (PROC_LINGER_NS).  Before both, ten 80 ms
# python3.11 runs gave 33 of 35 samples as a lone "[unknown]", and a
# process that ended before its first sample was read stayed listed as
# running until the minute's sweep.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3.11
[ -x "$PY" ] || PY=$(command -v python3) || fail "python3 is missing (packaging/setup.sh installs it)"
start_profd
sleep 1

# run_short N CMD...: N runs of CMD one after another; their pids in $T/pids.
run_short() {
	local n=$1 i
	shift
	: >"$T/pids"
	for i in $(seq 1 "$n"); do
		"$@" >/dev/null &
		echo $! >>"$T/pids"
		wait $!
	done
	sleep 2 # their last samples reach profd
}
# dump_all FILE: the folded profiles of the pids in $T/pids, together.
dump_all() {
	local p
	: >"$1"
	while read -r p; do
		ctl dump --pid "$p" -f folded >>"$1" 2>/dev/null
	done <"$T/pids"
}
share_of() { awk -v re="$2" '{ n = $NF; t += n; if ($0 ~ re) m += n }
	END { printf "%d %d\n", m + 0, t + 0 }' "$1"; }

run_short 12 "$PY" -c 'def work(): return sum(range(4 * 10**6))
work()'
dump_all "$T/py.folded"
read -r named total < <(share_of "$T/py.folded" ';?work \(<string>:1\)')
read -r unknown _ < <(share_of "$T/py.folded" '\[unknown\]|\[python frame unreadable\]')
echo "12 runs of 60 ms of Python: $total samples, work named in $named, unnamed frames in $unknown"
[ "$total" -ge 20 ] || fail "too few samples of the short processes ($total)"
[ $((named * 10)) -ge $((total * 4)) ] || fail "work named in $named of $total samples"
[ $((unknown * 4)) -le "$total" ] || fail "$unknown of $total samples have unnamed frames"
ok "short Python processes: work in $named of $total samples, $unknown with unnamed frames"

run_short 10 "$WORKLOADS/c_calls" 15
dump_all "$T/c.folded"
read -r named total < <(share_of "$T/c.folded" ';fib( |;)')
echo "10 runs of 80 ms of C: $total samples, fib named in $named"
[ "$total" -ge 20 ] || fail "too few samples of the short C processes ($total)"
[ $((named * 10)) -ge $((total * 7)) ] || fail "fib named in $named of $total samples"
ok "short C processes: fib in $named of $total samples"

# None of them listed as running once over.
ctl list --all >"$T/list"
while read -r p; do
	state=$(awk -v p="$p" '$1 == p { print $6 }' "$T/list")
	[ "$state" != running ] || fail "pid $p ended seconds ago and is listed as running"
done < <(cat "$T/pids")
ok "ended processes listed as exited, none as running"
stop_profd
