# profd runs as root: what is at the paths it writes must survive a typo
# in --socket or --state-dir.
#  - The socket: a regular file, a symbolic link (to a file of someone's)
#    and a FIFO at the path are refused at start with a sentence that
#    names what is there, before the BPF load, and left as they were; a
#    stale socket (a daemon that died) is replaced; on the way out profd
#    removes its socket and nothing that took its place.
#  - The history file and the two SQLite keeps beside it (-wal, -shm): a
#    FIFO (whose reads would block) or a symbolic link there is refused
#    and left as it is, profd running on without history; a regular file
#    that is not a profd history is moved aside whole, never removed.
#  - The state directory: anything but a folder (or a link to one) is
#    named and left, profd running on without history.
#  - The debuginfod cache (STATE/debuginfod, where DEBUGINFOD_URLS is
#    set): the library downloads into it as root and deletes what it has
#    not used for a week, so only a folder of profd's own, writable by it
#    alone, is used; a symbolic link (to someone's folder), a regular
#    file, a FIFO or a folder of another user there is named and left,
#    profd running on without fetching debug files.
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

# ---- the history file ----
rm -f "$SOCK"
# state_case NAME: profd on state dir $T/st, where the test put NAME in
# the way; it starts, says NAME is not used, answers; then stops.
state_case() {
	start_profd_state
	grep -q "history: $T/st/$1 is $2, not a regular file: not used, not replaced" "$T/profd.err" ||
		fail "$1 as $2: no clear error: $(cat "$T/profd.err")"
	ctl stats >/dev/null || fail "$1 as $2: profd does not answer"
	grep -q 'history unavailable' "$T/profd.err" || fail "$1 as $2: profd did not say history is off"
	stop_profd
	echo "$1 as $2: $(grep "$1 is" "$T/profd.err" | head -1)"
}
start_profd_state() {
	"$PROFD" --config /dev/null --state-dir "$T/st" --socket "$SOCK" 2>"$T/profd.err" &
	PROFD_PID=$!
	for _ in $(seq 1 100); do
		[ -S "$SOCK" ] && ctl stats >/dev/null 2>&1 && return 0
		kill -0 "$PROFD_PID" 2>/dev/null || fail "profd exited: $(cat "$T/profd.err")"
		sleep 0.1
	done
	fail "profd did not answer within 10 s"
}
echo "someone's file" >"$T/target"
for f in history.db history.db-wal history.db-shm; do
	rm -rf "$T/st"; mkdir -p "$T/st"
	mkfifo "$T/st/$f"
	state_case "$f" "a FIFO"
	[ -p "$T/st/$f" ] || fail "the FIFO $f is gone"
	rm -rf "$T/st"; mkdir -p "$T/st"
	ln -s "$T/target" "$T/st/$f"
	state_case "$f" "a symbolic link"
	[ -L "$T/st/$f" ] && [ "$(cat "$T/target")" = "someone's file" ] || fail "the link $f or its target changed"
done
ok "a FIFO or a symbolic link as history.db, -wal or -shm: refused, left as it was, profd runs without history"

rm -rf "$T/st"; mkdir -p "$T/st"
echo "precious data, not SQLite" >"$T/st/history.db"
start_profd_state
ctl stats >/dev/null || fail "profd does not answer"
stop_profd
aside=$(ls "$T/st"/history.db.corrupt-* 2>/dev/null | head -1)
[ -n "$aside" ] && [ "$(cat "$aside")" = "precious data, not SQLite" ] ||
	fail "a regular file at history.db was not kept whole: $(ls -l "$T/st")"
ok "a regular file that is not a history: moved aside whole ($(basename "$aside")), a fresh history made"

# ---- the state directory ----
# A regular file, a FIFO or a link to a file at --state-dir: named, left,
# profd runs without history (a link to a folder is followed: where an
# administrator keeps the state).
for kind in "a regular file" "a FIFO" "a symbolic link"; do
	rm -rf "$T/st"
	echo "someone's file" >"$T/target"
	case $kind in
	"a regular file") echo "precious data" >"$T/st" ;;
	"a FIFO") mkfifo "$T/st" ;;
	*) ln -s "$T/target" "$T/st" ;;
	esac
	start_profd_state
	shown=$kind
	[ "$kind" = "a symbolic link" ] && shown="a symbolic link to a regular file"
	grep -q "history: the state directory $T/st is $shown, not a folder: not used, not replaced" "$T/profd.err" ||
		fail "state dir as $kind: no clear error: $(cat "$T/profd.err")"
	ctl stats >/dev/null || fail "state dir as $kind: profd does not answer"
	stop_profd
	case $kind in
	"a regular file") [ "$(cat "$T/st")" = "precious data" ] ;;
	"a FIFO") [ -p "$T/st" ] ;;
	*) [ -L "$T/st" ] && [ "$(cat "$T/target")" = "someone's file" ] ;;
	esac || fail "state dir as $kind: changed: $(ls -la "$T")"
	echo "state dir as $kind: $(grep 'the state directory' "$T/profd.err" | head -1)"
done
rm -f "$T/st"
ok "a regular file, a FIFO or a link to a file as --state-dir: named, left as it was, profd runs without history"

# ---- the debuginfod cache ----
# cache_case WHAT: profd with DEBUGINFOD_URLS set (nothing listens there:
# nothing is fetched) on state dir $T/st, where the test put WHAT at
# st/debuginfod; it starts, says the cache is not used, answers.
cache_case() {
	DEBUGINFOD_URLS=http://127.0.0.1:9/ start_profd_state
	grep -q "debuginfod: the cache $T/st/debuginfod is .*not used" "$T/profd.err" ||
		fail "debuginfod cache as $1: no clear error: $(cat "$T/profd.err")"
	grep -q "debug files fetched from" "$T/profd.err" && fail "debuginfod cache as $1: debuginfod still on"
	ctl stats >/dev/null || fail "debuginfod cache as $1: profd does not answer"
	stop_profd
	echo "cache as $1: $(grep 'the cache' "$T/profd.err" | head -1)"
}
mkdir -p "$T/someones"
echo "someone's file" >"$T/someones/keep"
rm -rf "$T/st"; mkdir -p "$T/st"
ln -s "$T/someones" "$T/st/debuginfod"
cache_case "a symbolic link to a folder"
[ -L "$T/st/debuginfod" ] && [ "$(ls "$T/someones")" = keep ] && [ "$(cat "$T/someones/keep")" = "someone's file" ] ||
	fail "the link or the folder it points to changed: $(ls -la "$T/someones")"
rm -rf "$T/st"; mkdir -p "$T/st"
echo "precious data" >"$T/st/debuginfod"
cache_case "a regular file"
[ "$(cat "$T/st/debuginfod")" = "precious data" ] || fail "the regular file at the cache path changed"
rm -rf "$T/st"; mkdir -p "$T/st"
mkfifo "$T/st/debuginfod"
cache_case "a FIFO"
[ -p "$T/st/debuginfod" ] || fail "the FIFO at the cache path is gone"
rm -rf "$T/st"; mkdir -p "$T/st/debuginfod"
chown nobody "$T/st/debuginfod"
cache_case "a folder of another user"
[ -z "$(ls -A "$T/st/debuginfod")" ] || fail "profd wrote into another user's folder: $(ls -A "$T/st/debuginfod")"
ok "a symbolic link, a regular file, a FIFO or another user's folder as the debuginfod cache: not used, left as it was"

# Nothing in the way: the cache is made, profd's alone, and used.
rm -rf "$T/st"; mkdir -p "$T/st"
DEBUGINFOD_URLS=http://127.0.0.1:9/ start_profd_state
stop_profd
grep -q "debug files fetched from http://127.0.0.1:9/ (cache $T/st/debuginfod)" "$T/profd.err" ||
	fail "debuginfod not on with a fresh cache: $(cat "$T/profd.err")"
[ "$(stat -c '%F %a %u' "$T/st/debuginfod")" = "directory 700 0" ] ||
	fail "the cache made is $(stat -c '%F %a %u' "$T/st/debuginfod")"
ok "a fresh debuginfod cache: made as a folder of root's alone (700) and used"
