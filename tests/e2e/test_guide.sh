# Every example of the user guide runs.  The command lines of the ```sh
# blocks of docs/guide/*.md and README.md (all but README's first block,
# the build and test commands of the whole tree) are read from the
# markdown here, never copied, and each one is run, in order, against one
# real daemon and real workloads: it must exit 0 and write what it says,
# so an example that stops working fails this test (test_docs.sh only
# checks that their options exist).
#
# The daemon.  One profd serves every profctl example: it is started with
# the union of the options of the guide's `profd ...` lines (--off-cpu,
# --memory, ...), on a private socket and state directory, and the
# profctl lines find it through $PROFD_SOCKET, as written.  A `profd ...`
# line itself would start a second system-wide daemon, so it is run with
# --check appended: its options must parse and CPU sampling must be able
# to run (the union's daemon shows that they start together).  The GPU
# page needs CUDA libraries and a driver this machine may lack: as in
# test_gpu_cuda.sh and test_gpu_ioctl.sh, stub libcuda/libcudart
# (tests/workloads/gpu, --gpu on) and a pseudo-terminal watched as
# /dev/nvidiactl (--gpu-device PTY=nvidia) stand in; those two options
# are the test's own.
#
# Placeholders, replaced word by word (the mapping is subst() below):
#   profd, profctl in any directory (profd-VERSION/bin/, /opt/profd/bin/),
#     after sudo        -> $BUILD/profd, $BUILD/profctl
#   --pid 1234          -> the workload the line is about: --type cuda* ->
#     a CUDA program (gpu_app.py on the stubs), gpu-driver* -> gpu_ioctl.py,
#     memory -> py_memory.py, --async/--by-task -> py_async.py on CPython
#     3.14+, --subprocesses -> py_subprocs.py (parent of two), else
#     py_wall.py --gil 1 (computes, sleeps, blocks, contends for the GIL)
#   --duration 30s      -> 2s (the test's time; any DUR works the same)
#   --comm python3      -> unchanged: the workloads run as python3
#   --service myapp     -> unchanged: py_wall.py runs in a cgroup made as
#     systemd makes myapp.service's (v1 cpu hierarchy); where none can be
#     made, myapp -> the SERVICE profctl list shows for it (its script)
#   python3 train.py, python3 app.py -> python3 py_subprocs.py fork 0.5 F
#     (a parent and two workers, for about a second)
#   out.folded, before.folded, after.folded (read by render and diff) ->
#     written first by the test with profctl dump (py_wall.py, 1 s apart)
#   other output names  -> unchanged, in a scratch directory
# Each profctl line runs under a 60 s timeout; its named output (-o FILE,
# else what it writes to stdout or a new file such as record's default)
# must be there, not empty, and of its kind: an SVG, gzip (.gz), JSON
# (.json, or stdout with --json), folded lines (.folded).
#
# Skipped, each named in the output (a line that runs any other program
# fails the test until it is placed here or made to run):
#   mkdir, groupadd, cp, systemctl (production.md's installation): they
#     would install the release bundle into this machine's /opt, /etc,
#     groups and systemd; release.bundle tests the bundle (the block's
#     profctl line, `profctl stats`, is run here).
#   tar (production.md's and README's unpacking of the release tarball):
#     packaging/release.sh takes minutes to build one; release.bundle does
#     (README's `profd-VERSION/bin/profd` line is run here, as profd).
#   stacks --async, dump --by-task where no CPython 3.14+ can be had
#     (tests/e2e/get_debian_pythons.sh says why): asyncio introspection
#     needs it.
. "$(dirname "$0")/lib.sh"

: "${SRC:?SRC must point at the source directory}"
CC=${CC:-cc}
PY=$(python3 -c 'import sys; print(sys.executable)') || fail "python3 missing (a dependency)"
[ "$(basename "$PY")" = python3 ] || PY=$(command -v python3)
WL=$SRC/tests/workloads
WORK=$T/work
mkdir -p "$WORK"
export PROFD_SOCKET=$SOCK
t0=$(date +%s.%N)

# examples: "FILE:LINE<TAB>COMMAND" for each line of the guide's ```sh
# blocks, without its # comment (a line that is only a comment goes).
examples() {
	local f skip
	for f in "$SRC"/docs/guide/*.md "$SRC/README.md"; do
		skip=0
		[ "$f" = "$SRC/README.md" ] && skip=1
		awk -v name="${f#"$SRC"/}" -v skip="$skip" '
			/^ *```/ { if (fence) fence = 0; else if ($0 ~ /^ *```sh *$/) { fence = 1; n++ } else fence = 2; next }
			fence == 1 && n > skip { l = $0; sub(/(^|[ \t])#.*/, "", l); sub(/[ \t]+$/, "", l); sub(/^[ \t]+/, "", l)
				if (l != "") print name ":" NR "\t" l }
			fence == 2 { next }' "$f"
	done
}
mapfile -t EX < <(examples)
[ "${#EX[@]}" -ge 30 ] || fail "only ${#EX[@]} example lines found in the guide's sh blocks"

# prog_of WORD...: the program a line runs (after sudo), by its file name.
prog_of() {
	local w
	for w in "$@"; do
		case $w in sudo | [A-Za-z_]*=*) continue ;; esac
		basename "$w"
		return
	done
}

# The daemon's options: the union of the profd lines'.
DAEMON_OPTS=()
for e in "${EX[@]}"; do
	read -ra w <<<"${e#*$'\t'}"
	[ "$(prog_of "${w[@]}")" = profd ] || continue
	for o in "${w[@]}"; do
		[[ $o == --* ]] || continue
		case " ${DAEMON_OPTS[*]} " in *" $o "*) ;; *) DAEMON_OPTS+=("$o") ;; esac
	done
done
[ "${#DAEMON_OPTS[@]}" -gt 0 ] || fail "no profd example line found"

# The GPU stand-ins (see the header): stub CUDA libraries, and a driver
# device made of a pseudo-terminal, which must exist before profd starts.
need_cuda_uprobes
build_cuda_stubs "$T/lib" || fail "building the CUDA stub libraries failed"
mkdir -p "$T/ioctl" "$T/cuda"
run_bg "$PY" "$WL/gpu_ioctl.py" "$T/ioctl"
IOCTL=${CHILDREN[-1]}
for i in $(seq 1 100); do [ -s "$T/ioctl/ptys" ] && break; sleep 0.05; done
[ -s "$T/ioctl/ptys" ] || fail "gpu_ioctl.py did not start"
NV=$(head -1 "$T/ioctl/ptys")

start_profd "${DAEMON_OPTS[@]}" --gpu on --gpu-device "$NV=nvidia"
ok "one profd: ${DAEMON_OPTS[*]} (the guide's profd lines) --gpu on --gpu-device PTY=nvidia"

# The workloads.  py_wall.py in a cgroup like systemd's for myapp.service.
# The cgroups made here are removed, leaf first, once its processes are gone.
SERVICE=myapp CGDIR= CGMADE=()
CG=/sys/fs/cgroup/cpu
remove_cgs() {
	local d i
	for d in "${CGMADE[@]}"; do
		for i in $(seq 1 20); do rmdir "$d" 2>/dev/null && break; sleep 0.1; done
	done
}
[ -n "${KEEP:-}" ] || trap 'cleanup; remove_cgs' EXIT
if grep -qE "^cgroup $CG cgroup .*cpu" /proc/self/mounts; then
	for d in "$CG/system.slice/myapp.service" "$CG/system.slice"; do
		[ -d "$d" ] || CGMADE+=("$d")
	done
	for ((i = ${#CGMADE[@]} - 1; i >= 0; i--)); do mkdir "${CGMADE[$i]}" 2>/dev/null || break; done
	[ -w "$CG/system.slice/myapp.service/cgroup.procs" ] && CGDIR=$CG/system.slice/myapp.service
fi
if [ -n "$CGDIR" ]; then
	run_bg sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CGDIR" "$PY" "$WL/py_wall.py" --gil 1
else
	run_bg "$PY" "$WL/py_wall.py" --gil 1
fi
MAIN=${CHILDREN[-1]}
run_bg "$PY" "$WL/py_subprocs.py" fork 1 "$T/subprocs.out"
SUBPROCS=${CHILDREN[-1]}
run_bg "$PY" "$WL/py_memory.py" --truth "$T/mem.truth" --big-mib 32 --small 100000
MEM=${CHILDREN[-1]}
run_bg "$PY" "$WL/gpu/gpu_app.py" "$T/lib" "$T/cuda"
CUDA=${CHILDREN[-1]}
ASYNC=
mapfile -t SID < <("$SRC/tests/e2e/get_debian_pythons.sh" "$BUILD/debian-pythons" 14 2>"$T/pythons.err")
if [ "${#SID[@]}" -gt 0 ]; then
	start_ready "${SID[0]}" "$WL/py_async.py" 120
	ASYNC=$W
else
	NO_ASYNC="no CPython 3.14+ ($(tr '\n' ' ' <"$T/pythons.err")): asyncio introspection needs it"
fi
for i in $(seq 1 100); do [ -f "$T/cuda/loaded" ] && break; sleep 0.05; done
[ -f "$T/cuda/loaded" ] || fail "gpu_app.py did not load the stub libraries"
sleep 0.5 # the mmap report brings the CUDA probes
touch "$T/cuda/go" "$T/ioctl/go"
for f in "$T/cuda/done" "$T/ioctl/done" "$T/mem.truth"; do
	for i in $(seq 1 200); do [ -f "$f" ] && break; sleep 0.05; done
	[ -f "$f" ] || fail "a workload did not finish ($f)"
done
if [ -z "$CGDIR" ]; then
	SERVICE=$(ctl --json list | python3 -c 'import json, sys
print(next(p["service"] for p in json.load(sys.stdin) if p["pid"] == int(sys.argv[1])))' "$MAIN") ||
		fail "no SERVICE for py_wall.py in profctl list"
fi
# The files render and diff read.
(cd "$WORK" && ctl dump --pid "$MAIN" -o before.folded) || fail "dump for before.folded failed"
sleep 1
(cd "$WORK" && ctl dump --pid "$MAIN" -o after.folded && cp after.folded out.folded) || fail "dump for after.folded failed"
ok "workloads: py_wall.py $MAIN (service $SERVICE), py_subprocs.py $SUBPROCS, py_memory.py $MEM, gpu_app.py $CUDA, gpu_ioctl.py $IOCTL${ASYNC:+, py_async.py $ASYNC (${SID[0]##*/})}"

# pid_for LINE: the workload that --pid 1234 stands for in LINE.
pid_for() {
	case " $1 " in
	*" --type cuda"* | *" -t cuda"*) echo "$CUDA" ;;
	*" --type gpu-driver"* | *" -t gpu-driver"*) echo "$IOCTL" ;;
	*" --type memory "* | *" -t memory "*) echo "$MEM" ;;
	*" --async "* | *" --by-task "*) echo "$ASYNC" ;;
	*" --subprocesses "*) echo "$SUBPROCS" ;;
	*) echo "$MAIN" ;;
	esac
}

# subst LINE: the words LINE runs here, into ARGV (sudo and a trailing &
# dropped; see the header).
subst() {
	local line=$1 w prev='' n=0
	ARGV=()
	read -ra words <<<"$line"
	[ "${words[-1]}" = "&" ] && unset 'words[-1]'
	for w in "${words[@]}"; do
		if [ "$n" = 0 ]; then
			case $w in sudo) continue ;; esac
			case ${w##*/} in profd) w=$PROFD ;; profctl) w=$PROFCTL ;; esac
		fi
		n=$((n + 1))
		case $prev:$w in
		--pid:1234) w=$(pid_for "$line") ;;
		--duration:30s) w=2s ;;
		--service:myapp) w=$SERVICE ;;
		--:python3) w=$PY ;;
		*:train.py | *:app.py)
			ARGV+=("$WL/py_subprocs.py" fork 0.5 "$T/${w%.py}.out")
			prev=$w
			continue
			;;
		esac
		ARGV+=("$w")
		prev=$w
	done
}

# check_kind FILE: FILE is not empty and is what its name says.
check_kind() {
	local f=$1
	[ -s "$f" ] || { echo "${f##*/} is missing or empty"; return 1; }
	case $f in
	*.svg) head -c 200 "$f" | grep -qE '^(<\?xml|<svg)' || { echo "${f##*/} is not SVG"; return 1; } ;;
	*.gz) [ "$(head -c2 "$f" | od -An -tx1 | tr -d ' ')" = 1f8b ] || { echo "${f##*/} is not gzip"; return 1; } ;;
	*.json) python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$f" 2>/dev/null ||
		{ echo "${f##*/} is not JSON"; return 1; } ;;
	*.folded) awk '$NF !~ /^[0-9]+$/ { exit 1 }' "$f" || { echo "${f##*/} is not folded stacks"; return 1; } ;;
	esac
}

nrun=0 nskip=0 bad=''
for e in "${EX[@]}"; do
	where=${e%%$'\t'*} line=${e#*$'\t'}
	read -ra w <<<"$line"
	prog=$(prog_of "${w[@]}")
	reason=''
	case $prog in
	profd | profctl) ;;
	tar) reason="unpacks the release tarball, which packaging/release.sh takes minutes to build; release.bundle unpacks and runs it" ;;
	mkdir | groupadd | cp | systemctl)
		reason="installs the release bundle into this machine's /opt, /etc, groups and systemd; release.bundle tests the bundle" ;;
	*) fail "$where: \`$line\` runs $prog: run it here or give the reason it cannot run" ;;
	esac
	case " $line " in *" --async "* | *" --by-task "*) [ -n "$ASYNC" ] || reason=$NO_ASYNC ;; esac
	if [ -n "$reason" ]; then
		echo "skip: $where: $line  ($reason)"
		nskip=$((nskip + 1))
		continue
	fi
	case $line in *'|'* | *';'* | *'&&'* | *'>'* | *'<'* | *'$'* | *'`'*)
		fail "$where: \`$line\`: a shell construct this test does not run" ;;
	esac
	subst "$line"
	if [ "$prog" = profd ]; then
		# A second system daemon: its options, checked (see the header).
		ARGV+=(--config /dev/null --check)
	fi
	touch "$T/mark"
	sleep 0.01
	(cd "$WORK" && timeout 60 "${ARGV[@]}" >"$T/out" 2>"$T/err")
	rc=$?
	nrun=$((nrun + 1))
	if [ "$rc" != 0 ]; then
		bad="$bad
  $where: \`$line\` exited $rc: $(head -c 400 "$T/err")"
		continue
	fi
	# What it wrote: -o FILE, else stdout or the files it made.
	out='' why='' said=''
	for ((i = 0; i < ${#ARGV[@]} - 1; i++)); do
		case ${ARGV[$i]} in -o | --output) out=${ARGV[$((i + 1))]} ;; esac
	done
	if [ -n "$out" ]; then
		[ "$WORK/$out" -nt "$T/mark" ] || why="$out not written"
		[ -n "$why" ] || why=$(check_kind "$WORK/$out")
		said="wrote $out"
	elif [ "$prog" = profd ]; then
		grep -q '^  cpu sampling: yes' "$T/out" || why="--check: no CPU sampling"
		said="--check"
	else
		made=$(find "$WORK" -type f -newer "$T/mark")
		if [ -n "$made" ]; then
			for f in $made; do why=$why$(check_kind "$f"); done
			said="wrote $(echo "$made" | sed 's|.*/||' | tr '\n' ' ')"
		elif [ ! -s "$T/out" ]; then
			why="no output"
		elif [[ " $line " == *" --json "* ]]; then
			python3 -c 'import json, sys; json.load(sys.stdin)' <"$T/out" 2>/dev/null || why="stdout is not JSON"
		fi
		[ -n "$said" ] || said="$(wc -l <"$T/out") lines on stdout"
	fi
	if [ -n "$why" ]; then
		bad="$bad
  $where: \`$line\`: $why"
	else
		echo "ok: $where: $line  (${said% })"
	fi
done
[ -z "$bad" ] || fail "guide examples that do not work:$bad"
ok "guide: $nrun examples ran, $nskip skipped (named above), in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
stop_profd
