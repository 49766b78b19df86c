# Distributed jobs, with the real launchers and libraries from Debian:
# an Open MPI job (mpirun, mpi4py) and a torchrun job on PyTorch's gloo
# backend, each with one rank slower than the others; a stand-in NCCL
# called by ranks set by hand (one exits early); a launcher that exits
# before its ranks.  profctl jobs must list each job with its ranks and
# workers, the comm profile must hold each rank's wait on its Python
# line, and --explain must name the slow rank and its extra line: with
# the calls traced (--collectives), then by default, read from the
# samples (MPI's spinning waits; gloo's sleeping ones with --off-cpu).
. "$(dirname "$0")/lib.sh"

need_cuda_uprobes # the comm probes share the CUDA ones' attach cookies (5.15+)
PY=/usr/bin/python3
JOBS=$SRC/tests/workloads/jobs
command -v mpirun >/dev/null || fail "mpirun missing (openmpi-bin, packaging/setup.sh)"
command -v torchrun >/dev/null || fail "torchrun missing (python3-torch, packaging/setup.sh)"
"$PY" -c 'import mpi4py' 2>/dev/null || fail "mpi4py missing (python3-mpi4py, packaging/setup.sh)"
line_of() { grep -n -- "$2" "$1" | head -1 | cut -d: -f1; }

# Open MPI as root, more ranks than CPUs, no cross-memory attach (a
# container may forbid the ptrace it needs).
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_ALLOW_RUN_AS_ROOT=1 \
	OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

# Buckets of a second: --explain's windows below are a few seconds.
start_profd --no-history --collectives --bucket 1s

job_of() { # LAUNCHER [ID...] -> the id of a job under LAUNCHER, not one of those IDs
	ctl --json jobs | "$PY" -c '
import json, sys
for j in json.load(sys.stdin):
    if j["launcher"] == sys.argv[1] and str(j["id"]) not in sys.argv[2:]:
        print(j["id"]); break' "$@"
}
check_job() { # ID LAUNCHER RANKS WORKERS
	ctl --json jobs --explain "$1" >"$T/explain.json" || fail "jobs --explain $1 failed"
	"$PY" - "$T/explain.json" "$2" "$3" "$4" <<'EOF' || { cat "$T/explain.json" >&2; fail "job $1 is not what ran"; }
import json, sys
d = json.load(open(sys.argv[1]))
j = d["job"]
ranks = sorted(m["rank"] for m in j["members"] if m["role"] == "rank")
assert j["launcher"] == sys.argv[2], j["launcher"]
assert ranks == list(range(int(sys.argv[3]))), ranks
assert j["workers"] == int(sys.argv[4]), j["workers"]
EOF
}
straggler_is() { # RANK LINE-TEXT
	"$PY" - "$T/explain.json" "$1" "$2" <<'EOF' || { cat "$T/explain.json" >&2; fail "the straggler is not rank $1 on $2"; }
import json, sys
d = json.load(open(sys.argv[1]))
s = d["straggler"]
assert s and s["rank"] == int(sys.argv[2]), s
assert s["others_comm_s_median"] >= 2 * s["comm_s"], s
assert sys.argv[3] in s["extra_lines"][0]["line"], s["extra_lines"]
EOF
}
# ddp_job PORT: torchrun 3 ranks of ddp_job.py, rank 1 fed by a worker;
# sets ID and checks the job's members.  Debian's torch 1.13 on Python
# 3.11 reads --redirects/--tee "0" as no value (IntFlag iteration): a
# mapping for a rank that does not exist means the same, nothing
# redirected.
ddp_job() {
	(cd "$T" && torchrun --redirects 9:1 --tee 9:1 --nproc_per_node 3 --master_port "$1" \
		"$JOBS/ddp_job.py" 20 >"$T/ddp.out" 2>&1) ||
		{ tail -20 "$T/ddp.out" >&2; fail "the torchrun job failed"; }
	sleep 0.5
	ID=$(job_of torchrun)
	[ -n "$ID" ] || { ctl jobs >&2; fail "no torchrun job listed"; }
	check_job "$ID" torchrun 3 1
}
rank_pids() { # ID -> "rank pid" lines
	"$PY" -c '
import json, sys
for m in json.load(open(sys.argv[1]))["job"]["members"]:
    if m["role"] == "rank": print(m["rank"], m["pid"])' "$T/explain.json"
}

# ---- mpirun, mpi4py: rank 2 computes twice as long ----
MPI_WAIT=$(line_of "$JOBS/mpi_job.py" "the wait")
MPI_SPIN=$(line_of "$JOBS/mpi_job.py" "the straggler's extra line")
mpirun --oversubscribe -n 4 "$PY" "$JOBS/mpi_job.py" 25 0.08 >"$T/mpi.out" 2>&1 ||
	{ cat "$T/mpi.out" >&2; fail "the MPI job failed"; }
sleep 0.5
ID=$(job_of mpirun)
[ -n "$ID" ] || { ctl jobs >&2; ctl list >&2; fail "no mpirun job listed"; }
check_job "$ID" mpirun 4 0
while read -r rank pid; do
	ctl dump --pid "$pid" --type comm -o "$T/comm.$rank.folded" || fail "dump of rank $rank failed"
	n=$(sum_matching "$T/comm.$rank.folded" "mpi_job.py:$MPI_WAIT\\).*;MPI_Allreduce *$")
	[ "$n" -gt 0 ] || { cat "$T/comm.$rank.folded" >&2; fail "rank $rank: no MPI_Allreduce wait under mpi_job.py:$MPI_WAIT"; }
	ctl dump --pid "$pid" --type comm-calls -o "$T/calls.$rank.folded" || fail "dump failed"
	[ "$(total_samples "$T/calls.$rank.folded")" = 25 ] ||
		{ cat "$T/calls.$rank.folded" >&2; fail "rank $rank: not 25 MPI_Allreduce calls"; }
done < <(rank_pids)
straggler_is 2 "mpi_job.py:$MPI_SPIN"
ctl jobs --explain "$ID" | sed 's/^/  /'
ok "mpirun -n 4: 4 ranks, 25 MPI_Allreduce each under mpi_job.py:$MPI_WAIT, rank 2 named the straggler on line $MPI_SPIN"

ctl dump --job "$ID" -o "$T/job.folded" || fail "dump --job failed"
for r in 0 1 2 3; do
	grep -q "^rank $r (pid [0-9]*);" "$T/job.folded" || { head -5 "$T/job.folded" >&2; fail "no root frame for rank $r"; }
done
ctl dump --job "$ID" --format svg -o "$T/job.svg" || fail "dump --job --format svg failed"
grep -q "rank 2 (pid" "$T/job.svg" || fail "the job's flamegraph has no rank 2"
ok "dump --job: a root frame per rank (folded and SVG)"

# ---- --explain over a window: the straggler changes halfway ----
# Rank 2 is slow for 20 steps, then rank 1: the window before the
# switch names rank 2, the one after it rank 1, each with its compute
# line.  The windows keep 1.2 s from the switch (whole buckets of 1 s).
mpirun --oversubscribe -n 4 "$PY" "$JOBS/mpi_job.py" 40 0.08 20 >"$T/mpi2.out" 2>&1 ||
	{ cat "$T/mpi2.out" >&2; fail "the MPI job with a switch failed"; }
sleep 0.5
ID=$(job_of mpirun "$ID") # not the first one
[ -n "$ID" ] || { ctl jobs >&2; fail "the second mpirun job is not listed"; }
check_job "$ID" mpirun 4 0
SWITCH=$(awk '$1 == "switch" { print $2 }' "$T/mpi2.out")
[ -n "$SWITCH" ] || { cat "$T/mpi2.out" >&2; fail "the job did not print its switch"; }
ago_ms() { # MS -> "Nms": that long before the switch, as a duration ago
	"$PY" -c 'import sys, time; print("%dms" % ((time.time() - float(sys.argv[1])) * 1000 + int(sys.argv[2])))' "$SWITCH" "$1"
}
ctl --json jobs --explain "$ID" --until "$(ago_ms 1200)" >"$T/explain.json" ||
	fail "jobs --explain --until failed"
straggler_is 2 "mpi_job.py:$MPI_SPIN"
cp "$T/explain.json" "$T/before.json"
ctl --json jobs --explain "$ID" --since "$(ago_ms -1200)" >"$T/explain.json" ||
	fail "jobs --explain --since failed"
straggler_is 1 "mpi_job.py:$MPI_SPIN"
ctl --json jobs --explain "$ID" >"$T/whole.json" || fail "jobs --explain failed"
"$PY" - "$T/before.json" "$T/explain.json" "$T/whole.json" <<'EOF' ||
import json, sys
before, after, whole = (json.load(open(f))["job"] for f in sys.argv[1:])
for part in (before, after):
    assert 0 < part["comm_s"] < whole["comm_s"] and 0 < part["cpu_s"] < whole["cpu_s"], (part, whole)
    assert 0 < part["comm_calls"] < whole["comm_calls"] == 160, (part, whole)
assert before["comm_calls"] + after["comm_calls"] <= whole["comm_calls"], (before, after, whole)
EOF
	{ cat "$T/before.json" "$T/explain.json" "$T/whole.json" >&2; fail "the windows' figures are not parts of the whole"; }
ctl jobs --explain "$ID" --since "$(ago_ms -1200)" | sed 's/^/  /'
ok "--explain --until/--since around the switch: rank 2 the straggler before it, rank 1 after"

# ---- torchrun, gloo: rank 1 waits for its DataLoader-like worker ----
DDP_WAIT=$(line_of "$JOBS/ddp_job.py" "the wait")
DDP_SPIN=$(line_of "$JOBS/ddp_job.py" "the spin")
ddp_job 29517
"$PY" -c '
import json, sys
w = [m for m in json.load(open(sys.argv[1]))["job"]["members"] if m["role"] == "worker"]
assert len(w) == 1 and w[0]["rank"] == 1, w' "$T/explain.json" || fail "the worker is not listed under rank 1"
while read -r rank pid; do
	ctl dump --pid "$pid" --type comm -o "$T/ddp.$rank.folded" || fail "dump failed"
	n=$(sum_matching "$T/ddp.$rank.folded" "ddp_job.py:$DDP_WAIT\\).*;c10d::Work::wait *$")
	[ "$n" -gt 0 ] || { cat "$T/ddp.$rank.folded" >&2; fail "rank $rank: no c10d::Work::wait under ddp_job.py:$DDP_WAIT"; }
done < <(rank_pids)
straggler_is 1 "ddp_job.py:$DDP_SPIN"
ok "torchrun gloo: 3 ranks and rank 1's worker, c10d::Work::wait under ddp_job.py:$DDP_WAIT, rank 1 named the straggler"

# ---- NCCL stand-in, ranks set by hand, one exiting early ----
mkdir -p "$T/nccl"
${CC:-cc} -O2 -shared -fPIC -Wl,-soname,libnccl.so.2 -o "$T/nccl/libnccl.so.2" "$JOBS/nccl_stub.c" ||
	fail "building the NCCL stand-in failed"
NC_AR=$(line_of "$JOBS/nccl_app.py" "allreduce line")
bash -c "RANK=0 WORLD_SIZE=2 '$PY' '$JOBS/nccl_app.py' '$T/nccl/libnccl.so.2' 15 &
	RANK=1 WORLD_SIZE=2 '$PY' '$JOBS/nccl_app.py' '$T/nccl/libnccl.so.2' 3 &
	wait" || fail "the NCCL ranks failed"
sleep 0.5
ID=$(job_of "")
[ -n "$ID" ] || { ctl jobs >&2; fail "the ranks set by hand are not listed as a job"; }
check_job "$ID" "" 2 0
read -r _ PID0 < <(rank_pids | awk '$1 == 0')
ctl dump --pid "$PID0" --type comm-calls -o "$T/nccl.calls" || fail "dump failed"
n=$(sum_matching "$T/nccl.calls" "nccl_app.py:$NC_AR\\).*;ncclAllReduce *$")
[ "$n" = 15 ] || { cat "$T/nccl.calls" >&2; fail "rank 0: $n ncclAllReduce calls on nccl_app.py:$NC_AR, expected 15"; }
ctl dump --pid "$PID0" --type comm -o "$T/nccl.ns" || fail "dump failed"
ns=$(sum_matching "$T/nccl.ns" ";ncclAllReduce *$")
awk -v t="$ns" 'BEGIN { exit !(t >= 0.3e9 && t < 0.6e9) }' ||
	fail "rank 0: ncclAllReduce time $ns ns, expected 15 x 20 ms"
ok "NCCL stand-in: ranks set by hand listed as a job, 15 ncclAllReduce on nccl_app.py:$NC_AR, $((ns / 1000000)) ms"

# ---- a launcher that exits before its ranks ----
mkdir -p "$T/bin"
cat >"$T/bin/torchrun" <<EOF
#!/bin/bash
for r in 0 1; do
	RANK=\$r "$PY" -c 'import time
end = time.time() + 8
while time.time() < end: pass' &
done
sleep 1 # its ranks exec'ed under it, then it goes
exit 0
EOF
chmod +x "$T/bin/torchrun"
"$T/bin/torchrun"
# Its ranks are known once profd has read their variables (off the
# sample path, within a second or two of their first samples).
for _ in $(seq 1 60); do
	n=$(ctl --json jobs | "$PY" -c '
import json, sys
for j in json.load(sys.stdin):
    m = [x for x in j["members"] if x["role"] == "rank" and not x["exited"]]
    l = [x for x in j["members"] if x["role"] == "launcher"]
    if j["launcher"] == "torchrun" and l and l[0]["exited"] and len(m) == 2:
        print(j["id"])')
	[ -n "$n" ] && break
	sleep 0.1
done
[ -n "$n" ] || { ctl --json jobs >&2; fail "the ranks of a launcher that exited are not listed under it"; }
ok "a launcher that exited first still heads its 2 running ranks (job $n)"
ctl dump --job "$n" -o "$T/exited.folded" || fail "dump --job of a job whose launcher exited failed"
grep -q "^rank 1 (pid [0-9]*);" "$T/exited.folded" || fail "dump --job $n: no rank 1"
ok "dump --job of that job: its ranks (the launcher without samples left out)"
stop_profd

# ---- the default: collectives read from the samples, no probe ----
# Open MPI's ranks spin while they wait: their CPU samples in
# MPI_Allreduce are the comm profile, under the same Python line.  With
# more ranks than CPUs a rank also waits off the CPU (preempted, or
# yielding), which only --off-cpu sees: the straggler is asked there.
# The job recorded from its launcher's start: record --job -- CMD.
start_profd --no-history
ctl record -f folded -o "$T/rec.folded" --job -- \
	mpirun --oversubscribe -n 4 "$PY" "$JOBS/mpi_job.py" 25 0.08 >"$T/mpi.out" 2>&1 ||
	{ cat "$T/mpi.out" >&2; fail "record --job -- mpirun failed"; }
for r in 0 1 2 3; do
	grep -q "^rank $r (pid [0-9]*);" "$T/rec.folded" || { cut -d';' -f1 "$T/rec.folded" | sort | uniq -c >&2; fail "record --job: no root frame for rank $r"; }
done
ok "record --job -- mpirun: a root frame per rank"
ID=$(job_of mpirun)
[ -n "$ID" ] || { ctl jobs >&2; fail "no mpirun job listed"; }
check_job "$ID" mpirun 4 0
"$PY" -c '
import json, sys
j = json.load(open(sys.argv[1]))["job"]
assert j["collectives"] == "sampled" and j["comm_calls"] is None, j' "$T/explain.json" ||
	fail "the job does not say its collectives were read from samples"
[ "$(stat_of comm_uprobe_files)" = 0 ] || fail "collectives probed without --collectives"
waited=0
while read -r rank pid; do
	[ "$rank" = 2 ] && continue
	ctl dump --pid "$pid" --type comm -o "$T/s.$rank.folded" || fail "dump of rank $rank failed"
	n=$(sum_matching "$T/s.$rank.folded" "mpi_job.py:$MPI_WAIT\\).*;MPI_Allreduce *$")
	[ "$n" -gt 0 ] && waited=$((waited + 1))
done < <(rank_pids)
[ "$waited" -ge 1 ] || { cat "$T"/s.*.folded >&2; fail "none of ranks 0, 1, 3 has CPU samples in MPI_Allreduce under mpi_job.py:$MPI_WAIT"; }
ctl top --job "$ID" --once -n 5 >"$T/top.txt" || fail "top --job failed"
grep -q "compute (.*mpi_job.py:$MPI_SPIN)" "$T/top.txt" || { cat "$T/top.txt" >&2; fail "top --job: no compute line"; }
ok "without --collectives: CPU samples in MPI_Allreduce under mpi_job.py:$MPI_WAIT for $waited of 3 waiting ranks; top --job"
stop_profd

# With --off-cpu, MPI's waits off the CPU and gloo's sleeping ones (in
# c10d::Work::wait) count too; the straggler is named in each job.
start_profd --no-history --off-cpu
mpirun --oversubscribe -n 4 "$PY" "$JOBS/mpi_job.py" 25 0.08 >"$T/mpi.out" 2>&1 ||
	{ cat "$T/mpi.out" >&2; fail "the MPI job failed"; }
sleep 0.5
ID=$(job_of mpirun)
check_job "$ID" mpirun 4 0
straggler_is 2 "mpi_job.py:$MPI_SPIN"
ctl jobs --explain "$ID" | sed 's/^/  /'
ok "without --collectives, with --off-cpu: rank 2 named the MPI job's straggler"
ddp_job 29519
while read -r rank pid; do
	[ "$rank" = 1 ] && continue
	ctl dump --pid "$pid" --type comm -o "$T/sd.$rank.folded" || fail "dump failed"
	n=$(sum_matching "$T/sd.$rank.folded" "ddp_job.py:$DDP_WAIT\\).*;c10d::Work::wait *$")
	[ "$n" -gt 0 ] || { cat "$T/sd.$rank.folded" >&2; fail "rank $rank: no off-CPU wait in c10d::Work::wait under ddp_job.py:$DDP_WAIT"; }
done < <(rank_pids)
straggler_is 1 "ddp_job.py:$DDP_SPIN"
ok "without --collectives, with --off-cpu: gloo ranks' blocks in c10d::Work::wait under ddp_job.py:$DDP_WAIT, rank 1 named the straggler"
stop_profd

# ---- a job in history: found again after profd restarts ----
start_profd
mpirun --oversubscribe -n 2 "$PY" "$JOBS/mpi_job.py" 15 0.05 >"$T/mpi.out" 2>&1 ||
	{ cat "$T/mpi.out" >&2; fail "the MPI job failed"; }
sleep 0.5
ID=$(job_of mpirun)
check_job "$ID" mpirun 2 0
before=$(rank_pids | sort | tr '\n' ' ')
stop_profd # its last buckets written
start_profd
ctl --json jobs | "$PY" -c '
import json, sys
want = sys.argv[1].split()
want = sorted(zip(map(int, want[0::2]), map(int, want[1::2])))
for j in json.load(sys.stdin):
    got = sorted((m["rank"], m["pid"]) for m in j["members"] if m["role"] == "rank")
    if got == want:
        assert all(m["exited"] for m in j["members"]), j
        print(j["launcher"], j["job"]); break
else:
    sys.exit("no job with ranks %s" % want)' "$before" >"$T/hist.job" ||
	{ ctl --json jobs >&2; fail "the job is not listed after a restart (ranks and pids: $before)"; }
ok "after a restart, from history: the job of ranks $before($(cat "$T/hist.job"))"
