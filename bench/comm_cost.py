#!/usr/bin/env python3
"""bench/comm_cost.py: what timing collectives costs a job that makes many
small ones, side by side in one run.

A 2-rank mpi4py job (mpirun, Open MPI) calls comm.Allreduce on 8 doubles
in a loop for --seconds; each rank reports its calls and its own CPU
time.  Three ways, alternating, the first of each round in turn:
  - none:    no profd;
  - sampled: profd --all-processes --no-history, the default (time in
             collectives read from the samples' stacks);
  - traced:  the same with --collectives (the collectives probed).
Figures: calls a second (the job's speed) and the rank's CPU per call
(utime + stime from os.times(), the job's own cost); the table shows
each round's figure and the median.  Also what profd saw: the seconds the
ranks spent in collectives by its comm profile (profctl list --all).

--pace N: each call follows a fixed piece of Python compute, sized (by
two short runs without profd) so that the job makes N calls a second
without profd: a training loop's small collectives rather than a loop
that only calls.  The rank's CPU per call against none's is then the
share of a CPU that profd costs such a job.

usage: bench/comm_cost.py [--build DIR] [--rounds N] [--seconds N] [--pace N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOB = r'''
import os, sys, time
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
a, b = np.ones(8), np.empty(8)
work = int(sys.argv[2])


def compute(w):
    x = 0
    for i in range(w):
        x += i
    return x


comm.Barrier()
t0, c0 = time.perf_counter(), os.times()
n, end = 0, t0 + float(sys.argv[1])
while True:
    for _ in range(100):
        compute(work)
        comm.Allreduce(a, b, op=MPI.SUM)
    n += 100
    stop = np.array([time.perf_counter() >= end], dtype=np.int32)
    comm.Allreduce(MPI.IN_PLACE, stop, op=MPI.LOR)
    if stop[0]:
        break
c1, t1 = os.times(), time.perf_counter()
cpu = (c1.user - c0.user) + (c1.system - c0.system)
sys.stdout.write('%d %d %f %f\n' % (comm.Get_rank(), n, t1 - t0, cpu))
sys.stdout.flush()
'''


def run_job(seconds, work=0):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none", OMP_NUM_THREADS="1")
    out = subprocess.run(["mpirun", "--oversubscribe", "-n", "2", "/usr/bin/python3", "-c", JOB,
                          str(seconds), str(work)], env=env, capture_output=True, text=True, check=True)
    rows = [r for r in (line.split() for line in out.stdout.splitlines())
            if len(r) == 4 and r[0].isdigit() and r[1].isdigit()]
    if len(rows) != 2:
        raise SystemExit("comm_cost: the job did not report both ranks:\n" + out.stdout)
    calls = sum(int(r[1]) for r in rows) / len(rows)
    wall = max(float(r[2]) for r in rows)
    cpu = sum(float(r[3]) for r in rows) / len(rows)
    return calls / wall, cpu / calls * 1e6  # calls/s, us of rank CPU per call


def size_work(pace):
    """The compute a call follows for the job to make pace calls a second
    without profd: a call's time is linear in it, so two runs give it."""
    w1, w2 = 500, 2500
    t1, t2 = 1 / run_job(2, w1)[0], 1 / run_job(2, w2)[0]
    per = (t2 - t1) / (w2 - w1)
    if per <= 0 or 1 / pace <= t1 - w1 * per:
        raise SystemExit("comm_cost: cannot pace the job at %d calls a second here" % pace)
    return int((1 / pace - (t1 - w1 * per)) / per)


def comm_seen(build, d):
    """Seconds in the ranks' comm profiles, summed (the job has exited:
    profd keeps a launcher's ranks)."""
    out = subprocess.run([os.path.join(build, "profctl"), "--socket", os.path.join(d, "sock"),
                          "--json", "list", "--all"], capture_output=True, text=True, check=True)

    procs = json.loads(out.stdout)
    procs = procs.get("processes", procs) if isinstance(procs, dict) else procs
    return sum(p.get("comm_ns", 0) for p in procs if p.get("comm") == "python3") / 1e9


def cpu_of(pid):
    """A process's utime + stime in seconds, from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_profd(build, comm, d):
    args = [os.path.join(build, "profd"), "--config", "/dev/null", "--all-processes",
            "--no-history", "--socket", os.path.join(d, "sock"), "--state-dir", d]
    args.append("--collectives" if comm else "--no-collectives")
    p = subprocess.Popen(args, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if os.path.exists(os.path.join(d, "sock")):
            break
        time.sleep(0.1)
    time.sleep(2)  # its start-up work done
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--pace", type=int, default=0)
    a = ap.parse_args()
    work = size_work(a.pace) if a.pace else 0
    if a.pace:
        print("paced: %d loop steps of compute before each call (%d calls/s aimed at)"
              % (work, a.pace))
    modes = ["none", "sampled", "traced"]
    res = {m: [] for m in modes}
    seen = {m: [] for m in modes}
    own = {m: [] for m in modes}  # profd's CPU, % of one CPU over the job
    for r in range(a.rounds):
        order = modes[r % 3:] + modes[:r % 3]
        for m in order:
            with tempfile.TemporaryDirectory() as d:
                p = None if m == "none" else start_profd(a.build, m == "traced", d)
                try:
                    c0, t0 = cpu_of(p.pid) if p else 0, time.perf_counter()
                    res[m].append(run_job(a.seconds, work))
                    if p:
                        own[m].append((cpu_of(p.pid) - c0) / (time.perf_counter() - t0) * 100)
                    if p:
                        time.sleep(1)  # the last samples read
                        seen[m].append(comm_seen(a.build, d))
                finally:
                    if p:
                        p.terminate()
                        p.wait()
    base = statistics.median(x[0] for x in res["none"])
    base_cpu = statistics.median(x[1] for x in res["none"])
    print("| | calls/s (each round) | median | vs none | rank CPU us/call (each round) | median "
          "| vs none | s in comm profile, both ranks (each round) | profd CPU % (each round) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for m in modes:
        rate = [x[0] for x in res[m]]
        cpu = [x[1] for x in res[m]]
        print("| %s | %s | %.0f | %+.1f%% | %s | %.2f | %+.1f%% | %s | %s |" % (
            m, ", ".join("%.0f" % x for x in rate), statistics.median(rate),
            (statistics.median(rate) / base - 1) * 100, ", ".join("%.2f" % x for x in cpu),
            statistics.median(cpu), (statistics.median(cpu) / base_cpu - 1) * 100,
            ", ".join("%.2f" % x for x in seen[m]) or "-",
            ", ".join("%.1f" % x for x in own[m]) or "-"))


if __name__ == "__main__":
    main()
