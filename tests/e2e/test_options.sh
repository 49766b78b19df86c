# Size options take what the help and the config file show (64M, 1G):
# a number of bytes, or one with a binary suffix; anything else is refused
# before profd starts, with the option named.
. "$(dirname "$0")/lib.sh"

for bad in 64X -5M 0x100 16385M; do
	if "$PROFD" --config /dev/null --state-dir "$T/state" --socket "$SOCK" --all-processes \
		--unwind-table-bytes "$bad" 2>"$T/err"; then
		fail "--unwind-table-bytes $bad accepted"
	fi
	grep -q -- "--unwind-table-bytes: '$bad' must be a size" "$T/err" || fail "no clear error for $bad: $(cat "$T/err")"
done
ok "bad sizes refused with the option named"
start_profd --all-processes --unwind-table-bytes 96M --ringbuf-size 1MiB --history-max-size 2g
limit=$(stat_of unwind_table_bytes_limit)
[ "$limit" = $((96 << 20)) ] || fail "--unwind-table-bytes 96M gave a limit of $limit"
ok "--unwind-table-bytes 96M: limit $limit bytes"
stop_profd
