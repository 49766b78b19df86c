# Shared helpers for the end-to-end tests: start a real profd on a private
# socket, wait until it answers, and stop it.  Sourced, not run.
set -u

: "${BUILD:?BUILD must point at the build directory}"
PROFD=$BUILD/profd
PROFCTL=$BUILD/profctl
WORKLOADS=$BUILD/tests/workloads
T=$(mktemp -d /tmp/profd-e2e.XXXXXX)
SOCK=$T/profd.sock
PROFD_PID=
CHILDREN=()
# The C programs tests build (build_nofp, build_cuda_stubs, build_gpu_app).
. "$(dirname "${BASH_SOURCE[0]}")/programs.sh"

cleanup() {
	local p
	for p in "${CHILDREN[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "$PROFD_PID" ] && kill -TERM "$PROFD_PID" 2>/dev/null && wait "$PROFD_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT

fail() { echo "FAIL: $*" >&2; [ -f "$T/profd.err" ] && sed 's/^/  profd: /' "$T/profd.err" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
ok() { echo "ok: $*"; }

# profd refuses to run only where the machine refuses BPF or perf events;
# that is a skip.  Any other early exit is a failure.
start_profd() {
	[ "$(id -u)" = 0 ] || skip "needs root to load BPF programs (running as uid $(id -u))"
	# PROFD_TEST_ARGS: options every test's daemon gets (the legacy
	# build's runs: tests/CMakeLists.txt).
	# shellcheck disable=SC2086
	"$PROFD" --config /dev/null --state-dir "$T/state" --socket "$SOCK" ${PROFD_TEST_ARGS:-} "$@" \
		2>"$T/profd.err" &
	PROFD_PID=$!
	UNWIND_PROCS_MAP= # has_unwind_entry finds this profd's map
	local i
	for i in $(seq 1 100); do
		if [ -S "$SOCK" ] && "$PROFCTL" --socket "$SOCK" stats >/dev/null 2>&1; then
			return 0
		fi
		if ! kill -0 "$PROFD_PID" 2>/dev/null; then
			wait "$PROFD_PID"; PROFD_PID=
			# Only profd's own last word counts: a warning on the way
			# (a hook it fell back from) may quote EPERM too.
			if grep -E 'failed to start|must run as root' "$T/profd.err" | grep -qE 'Operation not permitted|Permission denied|must run as root|not supported|Function not implemented'; then
				skip "this machine refuses BPF or perf events: $(head -c 300 "$T/profd.err")"
			fi
			fail "profd exited during start-up"
		fi
		sleep 0.1
	done
	fail "profd did not answer within 10 s"
}

stop_profd() {
	kill -TERM "$PROFD_PID" || fail "profd already gone"
	wait "$PROFD_PID"; local rc=$?
	PROFD_PID=
	[ "$rc" = 0 ] || fail "profd exited with $rc on SIGTERM"
}

ctl() { "$PROFCTL" --socket "$SOCK" "$@"; }
# stat_of NAME: one figure of `profctl stats`.
stat_of() { ctl stats | awk -v k="$1" '$1 == k { print $2 }'; }

run_bg() { "$@" & CHILDREN+=($!); }

# heaviest FILE [N]: the N (3) heaviest lines of a folded profile (FILE
# "-": stdin), each after its weight (seen when a long line is cut), for
# a failure's message.
heaviest() { awk '{ print $NF "\t" $0 }' "$1" | sort -n | tail -"${2:-3}"; }

# start_ready CMD ARGS...: run CMD in the background until it prints
# "ready" (30 s at most: a loaded machine, a sanitizer run, starts Python
# slowly); sets W.
start_ready() {
	local out="$T/ready.$RANDOM" i
	"$@" >"$out" 2>&1 &
	CHILDREN+=($!)
	W=$!
	for i in $(seq 1 300); do
		grep -qs ready "$out" && return 0
		kill -0 "$W" 2>/dev/null || { cat "$out" >&2; fail "$1 exited before it was ready"; }
		sleep 0.1
	done
	fail "$1 not ready after 30 s"
}

# The python tools the tests share (tools/*.py).
TOOLS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/tools

# start_push_receiver DIR [OPTION...]: tools/push_receiver.py on a
# loopback port, saving each request under DIR (the OPTIONs are its own:
# --fails N ...); sets PORT.
start_push_receiver() {
	local dir=$1 i
	shift
	mkdir -p "$dir"
	run_bg python3 "$TOOLS/push_receiver.py" "$dir" "$@"
	for i in $(seq 1 50); do [ -s "$dir/port" ] && break; sleep 0.1; done
	[ -s "$dir/port" ] || fail "the loopback receiver did not start"
	PORT=$(cat "$dir/port")
	rm -f "$dir/port"
}
# push_accepted DIR: the requests saved in DIR that were answered 200.
push_accepted() { awk 'FNR == 5 && $0 == 200 { print FILENAME }' "$1"/*.req; }

# pprof_samples PB PID: PB is gzipped pprof that `go tool pprof -raw`
# reads, with leaf_heavy among its functions and PID as a sample label;
# sets SAMPLES to its count of samples (more than none).
pprof_samples() {
	local pb=$1
	[ "$(head -c2 "$pb" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "$pb is not gzip"
	go tool pprof -raw "$pb" >"$pb.raw" 2>"$pb.err" || fail "go tool pprof -raw $pb: $(cat "$pb.err")"
	grep -q 'leaf_heavy' "$pb.raw" || fail "$pb: no leaf_heavy in the profile"
	grep -q "pid:\[$2\]" "$pb.raw" || fail "$pb: no sample label pid:[$2]"
	# Samples section: "  COUNT  NANOS: loc ids"; the first value is samples.
	SAMPLES=$(awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
		s && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+:$/ { t += $1 } END { print t + 0 }' "$pb.raw")
	[ "$SAMPLES" -gt 0 ] || fail "$pb: no samples"
}

# sum_matching FILE REGEX: total count of folded lines whose stack matches.
sum_matching() { awk -v re="$2" '{ n = $NF; $NF = ""; if ($0 ~ re) s += n } END { printf "%.0f\n", s }' "$1"; }
total_samples() { awk '{ s += $NF } END { printf "%.0f\n", s }' "$1"; }

# has_unwind_entry PID: PID has its mapping list in profd's unwind_procs
# map (read with bpftool through the map ids of profd's open fds).
has_unwind_entry() {
	local id key
	if [ -z "${UNWIND_PROCS_MAP:-}" ]; then
		for id in $(grep -h '^map_id:' /proc/"$PROFD_PID"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u); do
			bpftool map show id "$id" 2>/dev/null | grep -q ' name unwind_procs ' && { UNWIND_PROCS_MAP=$id; break; }
		done
		[ -n "${UNWIND_PROCS_MAP:-}" ] || fail "profd's unwind_procs map not found with bpftool"
	fi
	key=$(printf '%08x' "$1" | sed 's/\(..\)\(..\)\(..\)\(..\)/\4 \3 \2 \1/')
	bpftool map lookup id "$UNWIND_PROCS_MAP" key hex $key >/dev/null 2>&1
}

# wait_unwind_ready PID...: until each PID has its unwind entry and no
# table is pending (at most 60 s).  Before that a walk stops at a file
# whose table is still being built (a fraction of a second after a
# process is first sampled, seconds on a loaded machine): tests of the
# walk itself look at samples taken after this.
wait_unwind_ready() {
	local i p missing
	for i in $(seq 1 600); do
		missing=
		for p in "$@"; do has_unwind_entry "$p" || missing=$p; done
		[ -z "$missing" ] && ctl stats | grep -qE '^unwind_tables_pending +0$' && return 0
		sleep 0.1
	done
	fail "no unwind entry for ${missing:-all of $*}, or tables still pending, after 60 s"
}

# need_cuda_uprobes: skip where the kernel cannot tell a shared uprobe
# program which entry point it runs for (bpf_get_attach_cookie, 5.15+):
# profd says so (--check) and traces no CUDA call there.
need_cuda_uprobes() {
	local line
	line=$("$PROFD" --config /dev/null --check 2>/dev/null | grep '^  cuda uprobes: ')
	case $line in "  cuda uprobes: yes"*) ;; *) skip "this kernel cannot run CUDA uprobes: $line" ;; esac
}
