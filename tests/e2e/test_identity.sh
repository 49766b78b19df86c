# Workload identity: a process is known by its service, not its comm.
# Cgroups made by hand in the v1 cpu hierarchy stand in for what systemd,
# docker and a kubelet make; each workload is moved into its cgroup
# before it execs (as a manager starts it):
#  - `python3 -m MOD` in system.slice/UNIT.service: SERVICE is the unit's
#    stem (a unit beats a script);
#  - a Python script in docker/<64 hex>: SERVICE is the script, the
#    container and runtime docker in --json;
#  - cpu_split in kubepods/burstable/pod<uid>/<64 hex>: SERVICE is the
#    container's short id, pod and qos in --json;
#  - `python3 -m MOD` in no cgroup of ours: SERVICE is the module;
#  - dump --service, --unit, --container (a prefix), --cgroup (a
#    directory above) each select that process's stacks and no other's;
#  - record --container (a prefix) records that process for its duration;
#  - the module's process moved into another unit while it runs is
#    listed under that unit's name within seconds (the cgroup recheck);
#  - after the unit's process exits and profd restarts on the same state
#    directory, list --all still names its service and dump --service
#    still selects its stacks (from history).
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || fail "python3 is missing (packaging/setup.sh installs it)"
PY=$(python3 -c 'import sys; print(sys.executable)')
. "$(dirname "$0")/cgroups.sh"

UNIT=profdid$$
DOCKER_ID=$(hex64)
KUBE_ID=$(hex64)
POD=$(cat /proc/sys/kernel/random/uuid)
MOD=profd_idmod$$
SCRIPT=profd_idscript$$.py

make_cg "/system.slice/$UNIT.service"
make_cg "/docker/$DOCKER_ID"
make_cg "/kubepods/burstable/pod$POD/$KUBE_ID"

mkdir -p "$T/py"
spin_py "$T/py/$MOD.py" spin_in_unit
spin_py "$T/py/${MOD}b.py" spin_plain_module
spin_py "$T/py/$SCRIPT" spin_in_docker

start_profd --all-processes
export PYTHONPATH=$T/py
in_cg "/system.slice/$UNIT.service" "$PY" -u -m "$MOD" 9
A=${CHILDREN[-1]}
in_cg "/docker/$DOCKER_ID" "$PY" "$T/py/$SCRIPT" 30
B=${CHILDREN[-1]}
in_cg "/kubepods/burstable/pod$POD/$KUBE_ID" "$WORKLOADS/cpu_split" 30
K=${CHILDREN[-1]}
run_bg "$PY" -m "${MOD}b" 30
C=${CHILDREN[-1]}
sleep 4

ctl list >"$T/list.txt" || fail "list failed"
ctl --json list >"$T/list.json" || fail "--json list failed"
echo "profctl list (unit $A, docker $B, kubepods $K, module $C):"
head -1 "$T/list.txt"
awk -v a="$A" -v b="$B" -v k="$K" -v c="$C" '$1 == a || $1 == b || $1 == k || $1 == c' "$T/list.txt"
# service PID: PID's SERVICE in the table.
service() {
	awk -v p="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "SERVICE") k = i }
		$1 == p && k { print $k }' "$T/list.txt"
}
[ "$(service "$A")" = "$UNIT" ] || fail "SERVICE of the unit's process $A: '$(service "$A")', not $UNIT"
[ "$(service "$B")" = "$SCRIPT" ] || fail "SERVICE of the docker script $B: '$(service "$B")'"
[ "$(service "$K")" = "${KUBE_ID:0:12}" ] || fail "SERVICE of the pod's $K: '$(service "$K")'"
[ "$(service "$C")" = "${MOD}b" ] || fail "SERVICE of the module $C: '$(service "$C")'"
ok "SERVICE: unit stem $UNIT, script $SCRIPT, container ${KUBE_ID:0:12}, module ${MOD}b"

python3 - "$T/list.json" "$A" "$B" "$K" "$UNIT" "$DOCKER_ID" "$KUBE_ID" "$POD" "$MOD" <<'PYEOF' || fail "list --json (above)"
import json, sys
procs = {p["pid"]: p for p in json.load(open(sys.argv[1]))}
a, b, k = (procs[int(x)] for x in sys.argv[2:5])
unit, docker, kube, pod, mod = sys.argv[5:10]
assert a["unit"] == unit + ".service" and a["script"] == mod, a
assert a["cgroup"] == "/system.slice/%s.service" % unit, a
assert b["runtime"] == "docker" and b["container"] == docker and b["unit"] == "", b
assert k["container"] == kube and k["pod"] == pod and k["qos"] == "burstable", k
assert k["runtime"] == "cri" and k["cgroup"].startswith("/kubepods/burstable/pod"), k
for p in (a, b, k):
    for f in ("service", "unit", "runtime", "container", "pod", "qos", "script", "cgroup"):
        assert f in p, (f, p)
PYEOF
ok "--json: unit, script, cgroup, runtime, container, pod and qos of each"

# selects FILE PID: every folded line is PID's (its root frame) and there
# are some.
selects() {
	[ -s "$1" ] || fail "$2: nothing selected"
	awk -v p="$3" '{ split($0, f, ";"); if (f[1] !~ "\\(" p "\\)$") bad++ } END { exit bad > 0 }' "$1" ||
		fail "$2 selects others than $3: $(cut -d';' -f1 "$1" | sort -u | head -5)"
}
ctl dump --service "$UNIT" -f folded >"$T/svc.folded" || fail "dump --service failed"
selects "$T/svc.folded" "--service $UNIT" "$A"
grep -q 'spin_in_unit' "$T/svc.folded" || fail "dump --service: no spin_in_unit frame"
if grep -qE 'spin_in_docker|spin_plain_module|leaf_heavy' "$T/svc.folded"; then
	fail "dump --service $UNIT has other workloads' frames"
fi
ctl dump --unit "$UNIT" -f folded >"$T/unit.folded" || fail "dump --unit failed"
selects "$T/unit.folded" "--unit $UNIT" "$A"
ctl dump --container "${DOCKER_ID:0:12}" -f folded >"$T/ctr.folded" || fail "dump --container failed"
selects "$T/ctr.folded" "--container ${DOCKER_ID:0:12}" "$B"
grep -q 'spin_in_docker' "$T/ctr.folded" || fail "dump --container: no spin_in_docker frame"
ctl dump --cgroup /kubepods -f folded >"$T/cg.folded" || fail "dump --cgroup failed"
selects "$T/cg.folded" "--cgroup /kubepods" "$K"
ctl dump --service "${MOD}b" -f folded >"$T/mod.folded" || fail "dump --service module failed"
selects "$T/mod.folded" "--service ${MOD}b" "$C"
if ctl dump --service no-such-service$$ -f folded >/dev/null 2>"$T/none.err"; then
	fail "dump --service of nothing succeeded"
fi
grep -q 'no process with samples matches service' "$T/none.err" || fail "no match: $(cat "$T/none.err")"
ok "dump --service, --unit, --container (prefix), --cgroup (above) select one process each"

ctl record --container "${KUBE_ID:0:8}" --duration 2s -f folded -o "$T/rec.folded" 2>"$T/rec.err" ||
	fail "record --container failed: $(cat "$T/rec.err")"
selects "$T/rec.folded" "record --container ${KUBE_ID:0:8}" "$K"
grep -q 'leaf_heavy' "$T/rec.folded" || fail "record --container: no leaf_heavy frame"
ok "record --container: $(total_samples "$T/rec.folded") samples in 2 s, all of $K"

ctl dump --service "$UNIT" -f json >"$T/svc.json" || fail "dump -f json failed"
python3 - "$T/svc.json" "$UNIT" <<'PYEOF' || fail "the JSON profile's workload (above)"
import json, sys
m = json.load(open(sys.argv[1]))["metadata"]
assert m["workload"]["service"] == sys.argv[2], m
assert m["workload"]["unit"] == sys.argv[2] + ".service", m
assert m["title"].startswith(sys.argv[2] + " ("), m
PYEOF
ok "dump -f json: metadata.workload and the title name the service"

# A running process moved by its manager: its cgroup is read again
# within 5 s while it runs (the RSS pass), no exec needed.
make_cg "/system.slice/${UNIT}m.service"
echo "$C" >"$CG/system.slice/${UNIT}m.service/cgroup.procs" || fail "cannot move $C"
t0=$(date +%s.%N)
moved=
for _ in $(seq 1 30); do
	sleep 0.5
	ctl list >"$T/list.txt" || fail "list failed"
	[ "$(service "$C")" = "${UNIT}m" ] && { moved=1; break; }
done
[ -n "$moved" ] || fail "$C moved to ${UNIT}m.service: SERVICE still '$(service "$C")' after 15 s"
ok "$C moved into ${UNIT}m.service: listed under ${UNIT}m after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"

# The unit's process ends; after a restart history still names it.
wait "$A" || fail "the unit's workload failed"
sleep 1
stop_profd
start_profd --all-processes
ctl list --all >"$T/after.txt" || fail "list --all after the restart failed"
row=$(awk -v p="$A" '$1 == p' "$T/after.txt")
echo "after a restart: $row"
echo "$row" | grep -q ' exited ' || fail "the exited $A is not in list --all after the restart"
cp "$T/after.txt" "$T/list.txt"
[ "$(service "$A")" = "$UNIT" ] || fail "after the restart SERVICE of $A is '$(service "$A")'"
ok "after a restart the exited $A is still $UNIT (from history)"
ctl dump --service "$UNIT" -f folded >"$T/hist.folded" || fail "dump --service from history failed"
selects "$T/hist.folded" "--service $UNIT (history)" "$A"
grep -q 'spin_in_unit' "$T/hist.folded" || fail "dump --service from history: no spin_in_unit"
ctl dump --unit "$UNIT" -f json | python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["title"])' >"$T/hist.title" ||
	fail "dump --unit -f json from history failed"
ok "dump --service after the restart: $(total_samples "$T/hist.folded") samples of $A from history ($(cat "$T/hist.title"))"
stop_profd
