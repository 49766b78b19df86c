# Symbols of stripped files from a debuginfod server (DEBUGINFOD_URLS):
# a workload stripped of its symbol table (its `fib` is static: in no
# dynamic symbol table either), its debug file made by objcopy and served
# by elfutils' debuginfod from a directory, nowhere under /usr/lib/debug.
#  - without DEBUGINFOD_URLS `fib` is never named;
#  - with it, profd fetches the debug file on its fetch lane (once, into
#    the state directory's cache) and names `fib` from then on;
#  - with a server that does not answer, samples keep coming, the failure
#    is counted, and profd stops at once.
# And the case users meet: Debian's stripped /usr/bin/python3.11, whose
# take_gil is only in python3.11-dbg's debug file.  Served by a second
# server (the first one's fetches stay as they were) and hidden from the
# workload (a tmpfs over /usr/lib/debug in its
# own mount namespace: profd looks there through /proc/PID/root), threads
# contending for the GIL show no "[GIL wait]" without DEBUGINFOD_URLS and
# show it with.  The workload runs a copy of the interpreter: profd keeps
# a file's symbols by its identity, and python3.11 itself may be mapped
# by processes that see the debug file.
. "$(dirname "$0")/lib.sh"

command -v debuginfod >/dev/null || fail "debuginfod is missing (packaging/setup.sh installs it)"
command -v objcopy >/dev/null || fail "objcopy is missing (packaging/setup.sh installs binutils)"
command -v curl >/dev/null || fail "curl is missing (packaging/setup.sh installs it)"

mkdir -p "$T/srv" "$T/bin"

# The interpreter's debug file, served; without it (no python3.11-dbg,
# no unshare) the GIL part is not run and says why.
PY=/usr/bin/python3.11 GIL_WHY=
pyid=$(readelf -n "$PY" 2>/dev/null | awk '/Build ID/ { print $3 }')
pydbg=/usr/lib/debug/.build-id/${pyid:0:2}/${pyid:2}.debug
if [ -z "$pyid" ]; then
	GIL_WHY="no $PY with a build-id"
elif ! nm "$pydbg" 2>/dev/null | grep -qE ' take_gil(\.|$)'; then
	GIL_WHY="no debug file naming take_gil at $pydbg (Debian: apt-get install python3.11-dbg)"
elif ! unshare -m --propagation private true 2>/dev/null; then
	GIL_WHY="unshare -m refused: the debug file cannot be hidden from the workload"
else
	mkdir -p "$T/srvpy"
	cp "$pydbg" "$T/srvpy/python3.11.debug"
	cp "$PY" "$T/bin/python3.11"
fi

# gil_ms TAG: ms of "[GIL wait]" under gil_worker after 5 s of py_wall.py
# --gil 4 run where /usr/lib/debug is empty; with WAIT_NAMED, dumped again
# for up to 20 s more until there are some (fetched on the fetch lane).
gil_ms() {
	run_bg unshare -m --propagation private sh -c \
		'mount -t tmpfs none /usr/lib/debug && exec "$0" "$@"' \
		"$T/bin/python3.11" "$SRC/tests/workloads/py_wall.py" --gil 4
	local pid=${CHILDREN[-1]} i ns=0
	sleep 5
	for i in $(seq 0 40); do
		ctl dump --pid "$pid" --type off-cpu --python-only -o "$T/gil.$1.folded" ||
			fail "dump of the GIL workload failed"
		ns=$(sum_matching "$T/gil.$1.folded" ';gil_worker \([^;]*\);\[GIL wait\]')
		[ -z "${WAIT_NAMED:-}" ] || [ "$ns" -gt 0 ] && break
		sleep 0.5
	done
	kill "$pid"
	wait "$pid" 2>/dev/null
	echo $((ns / 1000000))
}
cp "$WORKLOADS/c_calls" "$T/full"
objcopy --only-keep-debug "$T/full" "$T/srv/c_calls.debug" || fail "objcopy --only-keep-debug"
objcopy --strip-all "$T/full" "$T/bin/c_calls" || fail "objcopy --strip-all"
rm "$T/full"
! nm "$T/bin/c_calls" 2>/dev/null | grep -qw fib && ! nm -D "$T/bin/c_calls" | grep -qw fib ||
	fail "the stripped workload still names fib"
id=$(readelf -n "$T/bin/c_calls" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
[ -n "$id" ] || fail "the workload has no build-id"

# fib's samples in a profile of the stripped workload after 4 s; with
# WAIT_NAMED, dumped again for up to 20 s more until fib is named (the
# fetch lane serves the machine's other stripped files too, one at a time,
# and a sanitizer build is slow: "named in the end" is the behaviour).
fib_samples() {
	run_bg "$T/bin/c_calls" 1000000 >/dev/null
	local pid=${CHILDREN[-1]} i
	sleep 4
	for i in $(seq 0 40); do
		ctl dump --pid "$pid" -f folded -o "$T/$1.folded" || fail "dump of the workload failed"
		[ -z "${WAIT_NAMED:-}" ] && break
		[ "$(sum_matching "$T/$1.folded" '(^|;)fib( |;|$)')" -gt 0 ] && break
		sleep 0.5
	done
	# The CPU the workload had, in clock ticks: on a loaded machine it
	# gets less than its 4 s, and so fewer samples (fair_share below).
	awk '{ print $14 + $15 }' "/proc/$pid/stat" >"$T/$1.ticks"
	kill "$pid"
	wait "$pid" 2>/dev/null
	sum_matching "$T/$1.folded" '(^|;)fib( |;|$)'
}
# fair_share NAME: half the samples that the workload's own CPU time is
# worth at 99 Hz (at most the 4 s window's 396): fewer means its samples
# stalled.
fair_share() {
	awk -v t="$(cat "$T/$1.ticks")" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { n = t / hz * 99 / 2; if (n > 198) n = 198; printf "%d\n", n }'
}

start_profd --off-cpu
n=$(fib_samples plain)
echo "without DEBUGINFOD_URLS: fib in $n of $(total_samples "$T/plain.folded") samples"
[ "$(total_samples "$T/plain.folded")" -ge "$(fair_share plain)" ] || fail "too few samples of the workload"
[ "$n" = 0 ] || fail "fib named without its debug file: the test proves nothing"
ok "stripped: fib not named"
if [ -z "$GIL_WHY" ]; then
	ms=$(gil_ms plain)
	echo "without DEBUGINFOD_URLS: $ms ms of [GIL wait] in python3.11, its debug file hidden"
	[ "$ms" = 0 ] || fail "[GIL wait] without the debug file: the test proves nothing"
	[ "$(total_samples "$T/gil.plain.folded")" -gt 0 ] || fail "no off-CPU time of the GIL workload"
fi
stop_profd

# serve DIR BUILD-ID: a debuginfod server of DIR's files, once it serves
# BUILD-ID's debug file; its port in PORT.
serve() {
	local code i
	PORT=$((20000 + RANDOM % 20000))
	run_bg debuginfod -F "$1" -p "$PORT" -d "$1.sqlite" -t 0 -g 0 >"$1.log" 2>&1
	for i in $(seq 1 100); do
		code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/buildid/$2/debuginfo")
		[ "$code" = 200 ] && break
		sleep 0.2
	done
	[ "$code" = 200 ] || { cat "$1.log"; skip "the local debuginfod server did not serve the file (HTTP $code)"; }
}

serve "$T/srv" "$id"
port=$PORT

export DEBUGINFOD_URLS=http://127.0.0.1:$port
start_profd
n=$(WAIT_NAMED=1 fib_samples fetched)
total=$(total_samples "$T/fetched.folded")
echo "with DEBUGINFOD_URLS: fib in $n of $total samples;" \
	"fetched $(stat_of debuginfod_fetched), not found $(stat_of debuginfod_not_found), failed $(stat_of debuginfod_failed)"
grep -q "debuginfod: stripped files' debug files fetched from $DEBUGINFOD_URLS" "$T/profd.err" ||
	fail "no line saying debuginfod is on"
[ "$(stat_of debuginfod_fetched)" -ge 1 ] || fail "nothing fetched"
[ $((n * 10)) -ge $((total * 5)) ] || fail "fib named in $n of $total samples after the fetch"
ls "$T/state/debuginfod/$id/debuginfo" >/dev/null 2>&1 || fail "the debug file is not in the state directory's cache"
ok "debuginfod: fib named in $n of $total samples, the file cached under the state directory"
stop_profd

if [ -z "$GIL_WHY" ]; then
	serve "$T/srvpy" "$pyid"
	rm -rf "$T/state/debuginfod"
	export DEBUGINFOD_URLS=http://127.0.0.1:$PORT
	start_profd --off-cpu
	ms=$(WAIT_NAMED=1 gil_ms fetched)
	echo "with DEBUGINFOD_URLS: $ms ms of [GIL wait] under gil_worker"
	[ "$ms" -gt 0 ] || { heaviest "$T/gil.fetched.folded" | cut -c1-400 >&2
		fail "no [GIL wait] in python3.11 with its debug file served"; }
	ls "$T/state/debuginfod/$pyid/debuginfo" >/dev/null 2>&1 ||
		fail "python3.11's debug file is not in the state directory's cache"
	ok "debuginfod: python3.11's threads contending for the GIL show [GIL wait] ($ms ms)"
	stop_profd
else
	echo "note: the GIL part not run: $GIL_WHY"
fi

# A server that takes connections and never answers: nothing waits on it.
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True); time.sleep(600)' >"$T/mute.port" &
CHILDREN+=($!)
for i in $(seq 1 50); do [ -s "$T/mute.port" ] && break; sleep 0.1; done
rm -rf "$T/state/debuginfod"
# Its own 10 s limit made 60: stopping must not wait for either.
export DEBUGINFOD_URLS=http://127.0.0.1:$(cat "$T/mute.port") DEBUGINFOD_TIMEOUT=60
start_profd
n=$(fib_samples mute)
total=$(total_samples "$T/mute.folded")
echo "with a mute server: $total samples, fib in $n, $(cat "$T/mute.ticks") ticks of the workload's CPU"
want=$(fair_share mute)
[ "$want" -gt 20 ] || fail "the workload had only $(cat "$T/mute.ticks") ticks of CPU: nothing to judge"
[ "$total" -ge "$want" ] ||
	fail "samples stalled behind a mute debuginfod server: $total, for $(cat "$T/mute.ticks") ticks of the workload's CPU (want >= $want)"
t0=$(date +%s%N)
stop_profd
took=$((($(date +%s%N) - t0) / 1000000))
echo "profd stopped in $took ms with a fetch under way"
[ "$took" -lt 5000 ] || fail "stopping took $took ms: the fetch was waited out"
ok "a mute server: samples kept coming, profd stopped in $took ms"
