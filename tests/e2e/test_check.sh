# profd --check: one "name: value (why)" line per kernel fact, then a
# features section.  The facts are checked against the machine: the
# release against uname, and the trampolines verdict against what profd's
# own GPU hook picks when it has a device to watch (fexit where BPF
# trampolines attach, else uprobes).  As root CPU sampling must be
# possible (the other e2e tests sample here) and the exit status 0.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root: without it the BPF probes answer no"
"$PROFD" --config /dev/null --check >"$T/check" 2>"$T/check.err"
rc=$?
[ -s "$T/check" ] || fail "profd --check printed nothing: $(cat "$T/check.err")"
sed 's/^/  /' "$T/check"
# fact NAME: the value of a fact line (features indented, facts not).
fact() { sed -n "s/^$1: \([^ ]*\) (.*)\$/\1/p" "$T/check"; }
feature() { sed -n "s/^  $1: \([^ ]*\) (.*)\$/\1/p" "$T/check"; }

bad=$(grep -vE '^(features:|loaded:|( {2})?[A-Za-z0-9_ ().-]+: [^ ]+ \(.*\))$' "$T/check" | head -3)
[ -z "$bad" ] || fail "lines not 'name: value (why)': $bad"
[ "$(fact 'kernel release')" = "$(uname -r)" ] || fail "kernel release '$(fact 'kernel release')' is not uname -r '$(uname -r)'"
ok "kernel release $(uname -r)"
for f in btf ringbuf task_storage bpf_loop task_pt_regs current_task_btf copy_from_user_task attach_cookie \
	tp_btf trampolines kprobes uprobes tracefs perf_events pid_ns_init cgroup2; do
	case "$(fact "$f")" in yes|no) ;; *) fail "fact $f missing or not yes/no" ;; esac
done
for f in 'cpu sampling' 'python stacks' 'native unwinding (.eh_frame)' off-cpu memory mmap \
	'gpu ioctl hook' 'cuda uprobes'; do
	case "$(feature "$(printf '%s' "$f" | sed 's/[.]/\\&/g')")" in
	yes|no) ;; *) fail "feature '$f' missing" ;;
	esac
done
ok "every fact and feature has a line"

[ "$(feature 'cpu sampling')" = yes ] || fail "cpu sampling: $(grep 'cpu sampling' "$T/check")"
[ "$rc" = 0 ] || fail "exit status $rc with cpu sampling possible"
ok "cpu sampling: yes, exit status 0"

# The object loaded for real, in the build the kernel's facts call for.
build=$(feature build)
want=modern
[ "$(fact bpf_loop)$(fact task_pt_regs)$(fact current_task_btf)$(fact task_storage)" = yesyesyesyes ] ||
	want=legacy
[ "$build" = "$want" ] || fail "loaded build '$build', the facts call for $want"
grep -qE '^  (programs: all|[^:]+: refused) \(' "$T/check" || fail "no load verdict"
ok "loaded: the $build build"

# The BTF answer is the file's.
want=no; [ -r /sys/kernel/btf/vmlinux ] && want=yes
[ "$(fact btf)" = "$want" ] || fail "btf: $(fact btf), /sys/kernel/btf/vmlinux readable: $want"
want=no; [ -r /sys/bus/event_source/devices/uprobe/type ] && want=yes
[ "$(fact uprobes)" = "$want" ] || fail "uprobes: $(fact uprobes), uprobe PMU: $want"

# Trampolines against the GPU hook's own attach (gpu.c), /dev/null
# standing in for an accelerator.
start_profd --gpu-device /dev/null
fentry=$(stat_of gpu_syscall_hook_fentry)
uprobe=$(stat_of gpu_syscall_hook_uprobe)
stop_profd
[ "$fentry$uprobe" = 10 ] || [ "$fentry$uprobe" = 01 ] ||
	fail "the GPU hook chose neither fentry nor uprobes (fentry $fentry, uprobe $uprobe)"
want=no; [ "$fentry" = 1 ] && want=yes
[ "$(fact trampolines)" = "$want" ] ||
	fail "trampolines: $(fact trampolines), but the GPU hook took fentry: $fentry"
ok "trampolines: $(fact trampolines), as the GPU hook found"

# Unprivileged, the probes answer no and say so; CPU sampling is then
# impossible, which is exit status 1.
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$PROFD" --config /dev/null --check \
		>"$T/user" 2>"$T/user.err"
	rc=$?
	[ "$rc" = 1 ] || fail "unprivileged --check exited $rc"
	grep -q '^  cpu sampling: no (missing: ' "$T/user" || fail "unprivileged: $(grep 'cpu sampling' "$T/user")"
	grep -q 'not root' "$T/user.err" || fail "unprivileged: no word on privileges"
	ok "unprivileged: cpu sampling no, exit status 1"
fi
