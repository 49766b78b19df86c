# Where group profd does not exist, the control socket is 0600 (root only)
# and profd says so; never 0666.  profd runs in a private mount namespace
# whose /etc/group lacks the group, so the machine's own group (the
# package's, or test_access's) is left alone.  A user other than root is
# then refused by the socket's mode itself.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "a private mount namespace needs root (running as uid $(id -u))"
for tool in unshare mount setpriv; do
	command -v "$tool" >/dev/null || fail "$tool is missing (packaging/setup.sh installs it)"
done

grep -v '^profd:' /etc/group >"$T/group"
REAL_PROFD=$PROFD
PROFD=$T/profd-nogroup
cat >"$PROFD" <<EOS
#!/bin/sh
exec unshare --mount --propagation private sh -c 'mount --bind "\$0" /etc/group && exec "\$@"' \
	"$T/group" "$REAL_PROFD" "\$@"
EOS
chmod 0755 "$PROFD"
unshare --mount --propagation private sh -c "mount --bind '$T/group' /etc/group && ! getent group profd" ||
	skip "cannot hide group profd in a private mount namespace"

start_profd --rate 99
mode=$(stat -c %a "$SOCK")
[ "$mode" = 600 ] || fail "without group profd the socket is $mode, not 0600"
grep -q "no group 'profd'.*0600" "$T/profd.err" || fail "profd did not say the socket is 0600"
ok "no group profd: socket 0600, and profd says so: $(grep -o "no group 'profd'.*" "$T/profd.err")"
ctl stats >/dev/null || fail "root cannot use the 0600 socket"
ok "root still connects"

# Another user reaches the socket's directory but not the socket.
mkdir "$T/bin"
cp "$PROFCTL" "$T/bin/"
chmod 0755 "$T/bin" "$T/bin/profctl"
chmod 0711 "$T"
if setpriv --reuid=65534 --regid=65534 --clear-groups "$T/bin/profctl" --socket "$SOCK" \
	stats >/dev/null 2>"$T/other.err"; then
	fail "uid 65534 could connect to the 0600 socket"
fi
grep -q "Permission denied" "$T/other.err" || fail "unclear refusal: $(cat "$T/other.err")"
ok "uid 65534 is refused: $(cat "$T/other.err")"
stop_profd
