# What test_gecko.sh and test_trace.sh share: sourced after lib.sh, with
# PY set.  timeline_start starts profd (--off-cpu, and the CUDA probes
# where this kernel has them: cuda is "yes" or why not) and the workload
# tests/workloads/py_timeline.py (WL) for 8 s, waits for its threads and 4 s
# of their work; WPID is its pid.  gpu_app_run builds the CUDA stand-ins
# and gpu_app (tests/workloads/gpu), runs it to the end; GPID is its pid.

WL=$SRC/tests/workloads/py_timeline.py

timeline_start() {
	local line i
	cuda=yes
	line=$("$PROFD" --config /dev/null --check 2>/dev/null | grep '^  cuda uprobes: ')
	case $line in "  cuda uprobes: yes"*) ;; *) cuda="no ($line)" ;; esac
	if [ "$cuda" = yes ]; then
		start_profd --off-cpu --gpu on --cuda-launches
	else
		start_profd --off-cpu
	fi
	run_bg "$PY" "$WL" 8 >"$T/wl.out"
	WPID=${CHILDREN[-1]}
	for i in $(seq 1 100); do
		grep -q '^ready$' "$T/wl.out" && break
		kill -0 "$WPID" 2>/dev/null || fail "the workload exited early"
		sleep 0.1
	done
	grep -q '^ready$' "$T/wl.out" || fail "the workload did not start its threads"
	sleep 4
}

gpu_app_run() {
	local i
	build_cuda_stubs "$T/lib" || fail "building the stub libraries failed"
	build_gpu_app "$T" || fail "building gpu_app failed"
	run_bg "$T/gpu_app" "$T/go" "$T/done"
	GPID=${CHILDREN[-1]}
	wait_unwind_ready "$GPID"
	touch "$T/go"
	for i in $(seq 1 300); do [ -f "$T/done" ] && break; sleep 0.05; done
	[ -f "$T/done" ] || fail "gpu_app did not finish"
	sleep 0.5
}
