# profd runs as root: what is at its --socket path must survive a typo.
# A regular file, a symbolic link (to a file of someone's) and a FIFO at
# the path are refused at start with a sentence that names what is
# there, before the BPF load, and left as they were; a stale socket (a
# daemon that died) is replaced; on the way out profd removes its socket
# and nothing that took its place.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (running as uid $(id -u))"
command -v mkfifo >/dev/null || fail "mkfifo (coreutils) is missing"

# refused KIND: profd on $SOCK exits 1 at once, names KIND, loads nothing.
refused() {
	local t0 ms rc
	t0=$(date +%s%N)
	timeout 20 "$PROFD" --config /dev/null --state-dir "$T/state" --socket "$SOCK" \
		--duration 5s 2>"$T/err"
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$rc" = 1 ] || fail "profd on $1 at its socket path exited $rc: $(cat "$T/err")"
	grep -q "exists and is $1, not a socket: not replaced" "$T/err" ||
		fail "profd on $1: no clear error: $(cat "$T/err")"
	echo "$1: refused in $ms ms: $(grep 'not replaced' "$T/err" | head -1)"
}

echo "precious data" >"$SOCK"
refused "a regular file"
[ "$(cat "$SOCK")" = "precious data" ] || fail "the regular file at the socket path was changed"
rm -f "$SOCK"

echo "someone's file" >"$T/target"
ln -s "$T/target" "$SOCK"
refused "a symbolic link"
[ -L "$SOCK" ] && [ "$(cat "$T/target")" = "someone's file" ] || fail "the symbolic link or its target was changed"
rm -f "$SOCK"

mkfifo "$SOCK"
refused "a FIFO"
[ -p "$SOCK" ] || fail "the FIFO at the socket path is gone"
rm -f "$SOCK"
ok "a regular file, a symbolic link and a FIFO at --socket: refused, left as they were"

# A stale socket: bound, then its owner gone without removing it.
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$SOCK" ||
	fail "could not make a stale socket"
[ -S "$SOCK" ] || fail "no stale socket at $SOCK"
start_profd
ctl stats >/dev/null || fail "profd did not take over the stale socket"
# Something else takes the socket's place while profd runs: left alone.
rm -f "$SOCK"
echo "put here later" >"$SOCK"
stop_profd
[ "$(cat "$SOCK" 2>/dev/null)" = "put here later" ] || fail "profd removed a regular file on its way out"
ok "a stale socket replaced; on exit, a file put at the path is left"
