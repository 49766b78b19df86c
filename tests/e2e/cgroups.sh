# Cgroups made by hand in the v1 cpu hierarchy, standing in for what
# systemd, docker and a kubelet make, and the Python workloads the tests
# run in them.  Sourced after lib.sh, not run: skips where there is no
# such hierarchy or no root, and removes the cgroups it made on the way out.
CG=/sys/fs/cgroup/cpu
grep -qE "^cgroup $CG cgroup .*cpu" /proc/self/mounts ||
	skip "no cgroup v1 cpu hierarchy at $CG (this test makes its cgroups there)"
[ "$(id -u)" = 0 ] || skip "needs root to make cgroups and load BPF programs"

# hex64: a container id.
hex64() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }

# The cgroups this test made, removed (leaf first) on the way out.
MADE=()
# make_cg PATH: the cgroup PATH (below $CG) and those above it.
make_cg() {
	local path=$CG$1 d=$CG part
	for part in $(echo "$1" | tr '/' ' '); do
		d=$d/$part
		[ -d "$d" ] && continue
		mkdir "$d" || fail "cannot make cgroup $d"
		MADE+=("$d")
	done
	[ -w "$path/cgroup.procs" ] || skip "cgroup $path takes no processes"
}
remove_cgs() {
	local i
	for ((i = ${#MADE[@]} - 1; i >= 0; i--)); do rmdir "${MADE[$i]}" 2>/dev/null; done
}
# The processes first (they hold the cgroups), then the cgroups.
trap 'cleanup; remove_cgs' EXIT

# in_cg PATH CMD...: CMD run inside cgroup PATH from its first instruction.
in_cg() {
	local cg=$1
	shift
	run_bg sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG$cg" "$@"
}

# spin_py FILE FUNC: a Python file whose one function FUNC spins for
# argv[1] seconds (its frame names the workload).
spin_py() {
	cat >"$1" <<EOF
import sys, time
def $2(t):
    x = 0
    while time.time() < t:
        x += 1
$2(time.time() + float(sys.argv[1]))
EOF
}
