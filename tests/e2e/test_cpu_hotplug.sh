# A CPU that comes online after profd started is sampled too: the last CPU
# is taken offline, profd started, the CPU brought back; within profd's
# 10 s check it samples both, and a busy process pinned to that CPU gets
# samples.  Skips where CPUs cannot be taken offline (one CPU, no hotplug).
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "taking a CPU offline needs root"
LAST=$(($(nproc --all) - 1))
CTL=/sys/devices/system/cpu/cpu$LAST/online
[ "$LAST" -ge 1 ] && [ -w "$CTL" ] || skip "no CPU that can be taken offline"
restore() { echo 1 >"$CTL" 2>/dev/null; cleanup; }
trap restore EXIT
echo 0 >"$CTL" 2>/dev/null || skip "the kernel refuses to take cpu$LAST offline"

start_profd --all-processes
before=$(stat_of cpus_sampled)
echo 1 >"$CTL" || fail "cannot bring cpu$LAST back"
run_bg taskset -c "$LAST" sh -c 'while :; do :; done'
SPIN=${CHILDREN[-1]}
for _ in $(seq 1 30); do
	after=$(stat_of cpus_sampled)
	[ "$after" -gt "$before" ] && break
	sleep 1
done
[ "$after" -gt "$before" ] || fail "cpu$LAST came back but profd still samples $after CPUs"
sleep 2
n=$(ctl dump --pid "$SPIN" 2>/dev/null | awk '{ s += $NF } END { print s + 0 }')
[ "$n" -gt 0 ] || fail "the process on cpu$LAST got no samples"
ok "cpu$LAST came online under profd: $before -> $after CPUs sampled, $n samples of a process on it"
stop_profd
