# The control socket appears only once the BPF programs are loaded and
# attached: a script that waits for it must not find a daemon about to
# exit.  profd runs as root without CAP_BPF, CAP_PERFMON and
# CAP_SYS_ADMIN (setpriv's bounding set), so it passes its privilege
# check and fails at the BPF load; the socket must never show.  Then a
# second profd on a live daemon's socket must say so at once and leave
# that daemon reachable.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (running as uid $(id -u))"
command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"

setpriv --bounding-set=-bpf,-perfmon,-sys_admin "$PROFD" --config /dev/null \
	--state-dir "$T/state" --socket "$SOCK" 2>"$T/profd.err" &
pid=$!
seen=0
while kill -0 "$pid" 2>/dev/null; do [ -S "$SOCK" ] && seen=1; done
wait "$pid"; rc=$?
[ "$rc" != 0 ] || fail "profd without BPF capabilities started"
grep -q 'failed to start' "$T/profd.err" || fail "no start failure said"
[ "$seen" = 0 ] || fail "the socket appeared while the BPF load was failing"
[ -e "$SOCK" ] && fail "the socket was left behind"
ok "failed BPF load: exit $rc, no socket at any time"

start_profd
"$PROFD" --config /dev/null --state-dir "$T/state2" --socket "$SOCK" --duration 1s 2>"$T/second.err"
rc=$?
[ "$rc" = 1 ] || fail "a second profd on a live socket exited $rc"
grep -q 'another profd listens on' "$T/second.err" || fail "second profd: $(cat "$T/second.err")"
ctl stats >/dev/null || fail "the first profd lost its socket"
stop_profd
ok "a second profd refused the live socket; the first still answers"
