# Access control as a real unprivileged user: it reaches the socket (0660,
# group profd, the user a member; a user outside the group cannot
# connect), sees only its own processes, is refused another user's
# profile with "permission denied", and cannot start profd itself.  The
# user (profdtest), the group and the membership are removed afterwards
# when this test added them.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "creating a test user needs root (running as uid $(id -u))"
for tool in useradd userdel groupadd groupdel setpriv; do
	command -v "$tool" >/dev/null || fail "$tool is missing (packaging/setup.sh installs it)"
done

U=profdtest
CREATED_USER=
CREATED_GROUP=
ADDED_TO_GROUP=

access_cleanup() {
	local p
	# The user's processes must be gone before the user is.
	for p in "${CHILDREN[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${CHILDREN[@]}"; do wait "$p" 2>/dev/null; done
	CHILDREN=()
	cleanup
	[ -n "$ADDED_TO_GROUP" ] && gpasswd -d "$U" profd >/dev/null 2>&1
	[ -n "$CREATED_USER" ] && userdel "$U" 2>/dev/null
	[ -n "$CREATED_GROUP" ] && groupdel profd 2>/dev/null
}
trap access_cleanup EXIT

if ! id -u "$U" >/dev/null 2>&1; then
	useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$U" ||
		fail "useradd $U failed"
	CREATED_USER=1
fi
# The group the .deb creates: profd gives it the socket.
if ! getent group profd >/dev/null; then
	groupadd --system profd || fail "groupadd profd failed"
	CREATED_GROUP=1
fi
if ! id -nG "$U" | grep -qw profd; then
	usermod -a -G profd "$U" || fail "cannot add $U to group profd"
	ADDED_TO_GROUP=1
fi
UID_U=$(id -u "$U")
GID_U=$(id -g "$U")
# setpriv execs: the pid run_bg records is the program's own.
AS_USER=(setpriv --reuid="$UID_U" --regid="$GID_U" --init-groups)

# The user must reach the binaries and the socket: search-only $T, and
# copies of the binaries (the build tree may sit under a private dir).
mkdir "$T/bin"
cp "$PROFCTL" "$PROFD" "$WORKLOADS/cpu_split" "$T/bin/"
chmod 0755 "$T/bin" "$T/bin/"*
chmod 0711 "$T"

start_profd --all-processes --rate 199
run_bg "$T/bin/cpu_split" 60
ROOT_W=${CHILDREN[-1]}
run_bg "${AS_USER[@]}" "$T/bin/cpu_split" 60
USER_W=${CHILDREN[-1]}
# setpriv changes user just after the fork: give it a moment.
for _ in $(seq 1 50); do
	[ "$(stat -c %u "/proc/$USER_W" 2>/dev/null)" = "$UID_U" ] && break
	sleep 0.1
done
[ "$(stat -c %u "/proc/$USER_W" 2>/dev/null)" = "$UID_U" ] || fail "workload $USER_W does not run as $U"

for _ in $(seq 1 100); do
	ctl --json list >"$T/root.json" 2>/dev/null
	grep -q "\"pid\": $ROOT_W," "$T/root.json" && grep -q "\"pid\": $USER_W," "$T/root.json" && break
	sleep 0.1
done
grep -q "\"pid\": $ROOT_W," "$T/root.json" || fail "root's workload $ROOT_W never sampled"
grep -q "\"pid\": $USER_W," "$T/root.json" || fail "$U's workload $USER_W never sampled"
ok "root sees both workloads (root $ROOT_W, $U $USER_W)"

mode=$(stat -c %a "$SOCK")
group=$(stat -c %G "$SOCK")
case "$mode" in
660)
	[ "$group" = profd ] || fail "socket is 0660 but group $group, not profd"
	ok "socket mode 0660, group profd ($U is a member)"
	# Outside the group, no connection at all.
	if setpriv --reuid="$UID_U" --regid="$GID_U" --clear-groups "$T/bin/profctl" --socket "$SOCK" \
		list >/dev/null 2>"$T/nogroup.err"; then
		fail "a user outside group profd could connect"
	fi
	grep -q "Permission denied" "$T/nogroup.err" || fail "unclear refusal: $(cat "$T/nogroup.err")"
	ok "a user outside group profd cannot connect"
	;;
*) fail "socket mode $mode (group $group), not 0660 group profd" ;;
esac

uctl() { "${AS_USER[@]}" "$T/bin/profctl" --socket "$SOCK" "$@"; }

uctl --json list >"$T/user.json" 2>"$T/user.err" || fail "$U cannot list: $(cat "$T/user.err")"
grep -q "\"pid\": $USER_W," "$T/user.json" || fail "$U's list lacks its own $USER_W"
if grep -q "\"pid\": $ROOT_W," "$T/user.json"; then fail "$U's list shows root's $ROOT_W"; fi
others=$(grep -o '"uid": [0-9]*' "$T/user.json" | grep -cv "\"uid\": $UID_U$")
[ "$others" = 0 ] || fail "$U's list shows $others processes of other users"
ok "$U's list holds only its own processes ($(grep -c '"pid"' "$T/user.json"))"

if uctl dump --pid "$ROOT_W" >"$T/denied.folded" 2>"$T/denied.err"; then
	fail "$U could dump root's process $ROOT_W"
fi
grep -qi "permission denied" "$T/denied.err" || fail "unclear refusal: $(cat "$T/denied.err")"
[ ! -s "$T/denied.folded" ] || fail "a refused dump still wrote a profile"
uctl --json dump --pid "$ROOT_W" >"$T/denied.json" 2>/dev/null
grep -qi '"error": "permission denied' "$T/denied.json" || fail "no JSON refusal: $(cat "$T/denied.json")"
ok "$U is refused root's process: $(cat "$T/denied.err")"

uctl dump --pid "$USER_W" >"$T/own.folded" 2>"$T/own.err" || fail "$U cannot dump its own process: $(cat "$T/own.err")"
[ "$(total_samples "$T/own.folded")" -gt 0 ] || fail "$U's own profile is empty"
grep -q 'leaf_heavy' "$T/own.folded" || fail "$U's own profile lacks its frames"
ok "$U dumps its own process ($(total_samples "$T/own.folded") samples)"

# Whole-machine and by-name dumps hold only the user's own processes: one
# root frame per process, "comm (pid)", each of them the user's.
uctl dump --all >"$T/user.all.folded" 2>"$T/all.err" || fail "$U cannot dump --all: $(cat "$T/all.err")"
grep -q "($USER_W);" "$T/user.all.folded" || fail "$U's dump --all lacks its own $USER_W"
if grep -q "($ROOT_W);" "$T/user.all.folded"; then fail "$U's dump --all holds root's $ROOT_W"; fi
uctl dump --comm cpu_split >"$T/user.comm.folded" 2>/dev/null || fail "$U cannot dump --comm"
if grep -q "($ROOT_W);" "$T/user.comm.folded"; then fail "$U's dump --comm holds root's $ROOT_W"; fi
for pid in $(sed -n 's/^[^;]* (\([0-9]*\));.*/\1/p' "$T/user.all.folded" | sort -u); do
	owner=$(grep -o "\"pid\": $pid, \"uid\": [0-9]*" "$T/root.json" | grep -o '[0-9]*$' || true)
	[ -z "$owner" ] || [ "$owner" = "$UID_U" ] || fail "$U's dump --all holds pid $pid of uid $owner"
done
ok "$U's dump --all and dump --comm hold only its own processes"

# Kernel frames only as perf would show them to the user: with
# perf_event_paranoid >= 2 none, in its own process's profile and history.
run_bg "${AS_USER[@]}" dd if=/dev/zero of=/dev/null bs=64k count=2000000
DD=${CHILDREN[-1]}
sleep 3
ctl dump --pid "$DD" >"$T/dd.root.folded" || fail "root cannot dump $U's dd"
uctl dump --pid "$DD" >"$T/dd.user.folded" 2>"$T/dd.err" || fail "$U cannot dump its dd: $(cat "$T/dd.err")"
kill "$DD" 2>/dev/null
kroot=$(sum_matching "$T/dd.root.folded" '_\[k\]')
kuser=$(sum_matching "$T/dd.user.folded" '_\[k\]')
[ "$kroot" -gt 0 ] || fail "root sees no kernel frames in dd (a copy loop in the kernel)"
if [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 2 ]; then
	[ "$kuser" = 0 ] || fail "$U sees $kuser samples with kernel frames (perf_event_paranoid >= 2)"
	ok "kernel frames: root sees $kroot samples with them, $U none (perf_event_paranoid" \
		"$(cat /proc/sys/kernel/perf_event_paranoid))"
else
	[ "$kuser" -gt 0 ] || fail "$U sees no kernel frames though perf_event_paranoid allows them"
	ok "kernel frames: shown to $U too (perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid))"
fi

# profd itself: refused with the privileges it lacks, not a crash or a hang.
rc=0
timeout 20 "${AS_USER[@]}" "$T/bin/profd" --socket "$T/user.sock" >/dev/null 2>"$T/uprofd.err" || rc=$?
[ "$rc" != 0 ] || fail "profd started as $U"
[ "$rc" != 124 ] || fail "profd as $U neither started nor exited within 20 s"
grep -qE 'CAP_BPF|root' "$T/uprofd.err" || fail "profd as $U does not say what it lacks: $(cat "$T/uprofd.err")"
ok "profd as $U exits $rc: $(head -n 1 "$T/uprofd.err")"

stop_profd
