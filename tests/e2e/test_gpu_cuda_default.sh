# CUDA tracing at its default: synchronizations, copies and allocations
# are traced, kernel and graph launches are not (--cuda-launches adds
# them: two uprobe traps each, tens of thousands a second in training).
# The Python stand-in of test_gpu_cuda.sh (stub libraries, known calls
# from known lines): its synchronizations on their lines, no launch.
. "$(dirname "$0")/lib.sh"

CC=${CC:-cc}
need_cuda_uprobes
GPU=$SRC/tests/workloads/gpu
PY=$(command -v python3) || fail "python3 missing (a dependency)"
PYAPP=$GPU/gpu_app.py
mkdir -p "$T/py"
build_cuda_stubs "$T/lib" || fail "building the stub libraries failed"

start_profd --gpu on
run_bg "$PY" "$PYAPP" "$T/lib" "$T/py"
PYPID=${CHILDREN[-1]}
for _ in $(seq 1 100); do [ -f "$T/py/loaded" ] && break; sleep 0.05; done
[ -f "$T/py/loaded" ] || fail "the Python program did not load the libraries"
for _ in $(seq 1 100); do
	ctl stats | grep -qE '^cuda_uprobe_files +2$' && break
	sleep 0.05
done
ctl stats | grep -qE '^cuda_uprobe_files +2$' || fail "the libraries were not probed"
touch "$T/py/go"
for _ in $(seq 1 300); do [ -f "$T/py/done" ] && break; sleep 0.05; done
[ -f "$T/py/done" ] || fail "the Python program did not finish"
sleep 0.5

ctl dump --pid "$PYPID" --type cuda-calls --python-only -o "$T/py.folded" || fail "dump failed"
sed 's/^/  py: /' "$T/py.folded"
launches=$(sum_matching "$T/py.folded" 'Launch')
syncs=$(sum_matching "$T/py.folded" ";sync_all \\($PYAPP:[0-9]+\\);cudaDeviceSynchronize $")
streams=$(sum_matching "$T/py.folded" ";stream_syncs \\($PYAPP:[0-9]+\\);cuStreamSynchronize $")
[ "$launches" = 0 ] || fail "$launches launches traced without --cuda-launches"
[ "$syncs" = 25 ] || fail "cudaDeviceSynchronize: $syncs calls, expected 25"
[ "$streams" = 12 ] || fail "cuStreamSynchronize: $streams calls, expected 12"
ok "default: 25 + 12 synchronizations on their lines, no launch traced"
stop_profd
