# profctl record -- CMD: profctl starts the command, records it from its
# first instruction until it exits (not until --duration), passes its exit
# status on, and with --subprocesses includes every descendant (fork and
# spawn multiprocessing workers, subprocess.run), a root frame each; dump
# --pid --subprocesses gives the same tree afterwards.
. "$(dirname "$0")/lib.sh"
: "${SRC:?SRC must point at the source directory}"

PY=/usr/bin/python3.11
[ -x "$PY" ] || PY=$(command -v python3) || fail "python3 is missing (packaging/setup.sh installs it)"
start_profd --rate 199

t0=$(date +%s)
ctl record --subprocesses --duration 60s -f folded -o "$T/tree.folded" -- \
	"$PY" "$SRC/tests/workloads/py_children.py" 2>"$T/rec.err"
rc=$?
took=$(( $(date +%s) - t0 ))
cat "$T/rec.err"
[ "$rc" = 3 ] || fail "profctl exited $rc, the command exited 3"
[ "$took" -lt 30 ] || fail "recording took ${took}s: it should end when the command exits"
ok "exit status passed through; recording ended with the command (${took}s)"

# Each function's samples, and the process root (first frame) it is under.
samples_of() { awk -v f="$1" 'index($0, f) { n += $NF } END { print n + 0 }' "$2"; }
root_of() { awk -v f="$1" 'index($0, f) { split($0, a, ";"); print a[1]; exit }' "$2"; }
for f in parent_work child_fork_work child_spawn_work grandchild_run_work; do
	n=$(samples_of "$f" "$T/tree.folded")
	echo "$f: $n samples under $(root_of "$f" "$T/tree.folded")"
	# 1-1.5 s of CPU at 199 Hz is ~200-300 samples; a busy machine gives less.
	[ "$n" -ge 30 ] || fail "$f has $n samples in the --subprocesses recording"
done
roots=$(for f in parent_work child_fork_work child_spawn_work grandchild_run_work; do
	root_of "$f" "$T/tree.folded"; done | sort -u | wc -l)
[ "$roots" = 4 ] || fail "the four workers should sit under four process roots, found $roots"
ok "parent, fork and spawn workers and the subprocess.run child each under its own root"

# Without --subprocesses: the command's own process only.
ctl record -f folded -o "$T/own.folded" -- "$PY" "$SRC/tests/workloads/py_children.py" 2>/dev/null
rc=$?
[ "$rc" = 3 ] || fail "profctl exited $rc without --subprocesses"
[ "$(samples_of parent_work "$T/own.folded")" -ge 30 ] || fail "the command itself was not recorded"
for f in child_fork_work child_spawn_work grandchild_run_work; do
	[ "$(samples_of "$f" "$T/own.folded")" = 0 ] || fail "$f recorded without --subprocesses"
done
ok "without --subprocesses only the command's process"

# After the fact: the parent's pid with --subprocesses gives the tree.
parent=$(root_of parent_work "$T/tree.folded" | sed -n 's/.*(\([0-9]*\))$/\1/p')
[ -n "$parent" ] || fail "no pid in the parent's root frame"
ctl dump --pid "$parent" --subprocesses -o "$T/dump.folded" || fail "dump --subprocesses failed"
for f in child_fork_work child_spawn_work grandchild_run_work; do
	[ "$(samples_of "$f" "$T/dump.folded")" -ge 30 ] || fail "dump --subprocesses lacks $f"
done
ok "dump --pid $parent --subprocesses holds the whole tree"

# Under sudo, CMD runs as the user who typed sudo, not as root.
if id nobody >/dev/null 2>&1; then
	W=$(mktemp -d /tmp/profd-rec.XXXXXX)
	chmod 0777 "$W"
	SUDO_UID=$(id -u nobody) SUDO_GID=$(id -g nobody) SUDO_USER=nobody \
		"$PROFCTL" --socket "$SOCK" record -f folded -o "$T/sudo.folded" -- \
		sh -c 'id -u >"$1/uid"; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' sh "$W" \
		2>"$T/sudo.err"
	rc=$?
	got=$(cat "$W/uid" 2>/dev/null)
	rm -rf "$W"
	[ "$rc" = 0 ] || fail "record under sudo exited $rc: $(cat "$T/sudo.err")"
	[ "$got" = "$(id -u nobody)" ] || fail "CMD ran as uid '$got', not as the sudo user"
	ok "under sudo the command ran as uid $got"
fi

# A command that cannot run: the shell's 127 and a clear message.
ctl record -o "$T/x.folded" -- /nonexistent/cmd 2>"$T/bad.err"
rc=$?
[ "$rc" = 127 ] || fail "a missing command gave exit $rc"
grep -q "cannot run /nonexistent/cmd" "$T/bad.err" || fail "unclear error: $(cat "$T/bad.err")"
ok "missing command: exit 127, '$(cat "$T/bad.err")'"

# A command over before its first sample: an empty profile and a sentence
# saying why, with the command's own status.  `sh -c 'exit 5'` runs ~2 ms
# (more under the sanitizers, whose profctl forks it), which a 199 Hz
# profd samples one time in five: a daemon at 1 Hz, and up to three
# tries, keep the case this checks (never sampled) from being skipped by
# a sample that did land (then the profile has it, which is right too).
stop_profd
start_profd --rate 1
for try in 1 2 3; do
	ctl record -f folded -o "$T/short.folded" -- sh -c 'exit 5' 2>"$T/short.err"
	rc=$?
	[ "$rc" = 5 ] || fail "a command too short to sample gave exit $rc: $(cat "$T/short.err")"
	[ -s "$T/short.folded" ] || break
	echo "try $try: sampled after all ($(cat "$T/short.err")), again"
done
[ -f "$T/short.folded" ] && [ ! -s "$T/short.folded" ] ||
	fail "no empty profile for a command never sampled: $(cat "$T/short.err")"
grep -q "was never sampled" "$T/short.err" || fail "unclear note: $(cat "$T/short.err")"
ok "a command never sampled: exit 5 passed on, an empty profile, '$(head -n 1 "$T/short.err")'"
stop_profd
