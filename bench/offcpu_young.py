#!/usr/bin/env python3
"""bench/offcpu_young.py: what walking young threads through a storm costs
(bpf/offcpu.bpf.h: a thread's first 2 s and 64 walks are walked even in
a context-switch storm), next to a baseline build without it.

Two loads, each under profd --off-cpu from BUILD and from BASELINE, taking
turns round after round:
  - young storms: fresh tests/workloads/pingpong pairs of 100,000 round
    trips pinned to CPU 0 (each well under 2 s old when it ends);
  - an exec storm: tests/workloads/exec_storm, 300 spawns of /bin/true a
    second for 10 s.
Per load and build: context switches seen by on_sched_switch, its BPF ns
per switch and BPF ms in all (kernel.bpf_stats_enabled on for the run),
and profd's off-CPU walks and blocks (profctl stats).  Prints a Markdown
table of medians.  Needs root and bpftool.

usage: bench/offcpu_young.py --baseline DIR [--build DIR] [--rounds N]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def switch_prog():
    """(run_time_ns, run_cnt) of the loaded sched_switch programs."""
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True,
                                      text=True, check=True).stdout)
    t = c = 0
    for p in progs:
        if p.get("name", "").startswith("on_sched_swit"):
            t += p.get("run_time_ns", 0)
            c += p.get("run_cnt", 0)
    return t, c


def stats(build, sock):
    out = subprocess.run([f"{build}/profctl", "--socket", sock, "stats"], capture_output=True,
                         text=True, check=True).stdout
    return {k: int(v) for k, v in (line.split()[:2] for line in out.splitlines()
                                   if len(line.split()) >= 2 and line.split()[1].isdigit())}


def young_storms(workloads):
    for _ in range(6):
        subprocess.run([f"{workloads}/pingpong", "100000", "0"], capture_output=True, check=True)


def exec_storm(workloads):
    subprocess.run([f"{workloads}/exec_storm", "10", "2", "300"], capture_output=True, check=True)


def one_run(build, load, workloads):
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "profd.sock")
        profd = subprocess.Popen([f"{build}/profd", "--all-processes", "--off-cpu", "--config",
                                  "/dev/null", "--socket", sock, "--state-dir", tmp],
                                 stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                if os.path.exists(sock):
                    break
                time.sleep(0.1)
            time.sleep(2)
            t0, c0 = switch_prog()
            s0 = stats(build, sock)
            load(workloads)
            t1, c1 = switch_prog()
            s1 = stats(build, sock)
        finally:
            profd.terminate()
            profd.wait()
    return {"switches": c1 - c0, "bpf_ns": (t1 - t0) / max(c1 - c0, 1), "bpf_ms": (t1 - t0) / 1e6,
            "walks": s1["bpf_offcpu_stack_walks"] - s0["bpf_offcpu_stack_walks"],
            "blocks": s1["bpf_offcpu_blocks"] - s0["bpf_offcpu_blocks"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    workloads = os.path.join(a.build, "tests", "workloads")
    builds = {"profd --off-cpu": a.build, "baseline --off-cpu": a.baseline}
    loads = {"young storms (12 fresh ping-pong processes)": young_storms,
             "exec storm (300/s, 10 s)": exec_storm}
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        was = f.read().strip()
    res = {(l, b): [] for l in loads for b in builds}
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        for r in range(a.rounds):
            order = list(builds.items())
            if r % 2:
                order.reverse()
            for lname, load in loads.items():
                for bname, build in order:
                    res[(lname, bname)].append(one_run(build, load, workloads))
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(was)
    print("| load | build | switches | BPF ns per switch | BPF ms | off-CPU walks | blocks |")
    print("|---|---|---|---|---|---|---|")
    for (lname, bname), runs in res.items():
        med = {k: statistics.median(x[k] for x in runs) for k in runs[0]}
        print(f"| {lname} | {bname} | {med['switches']:,.0f} | {med['bpf_ns']:.0f} | "
              f"{med['bpf_ms']:.0f} | {med['walks']:,.0f} | {med['blocks']:,.0f} |")


if __name__ == "__main__":
    main()
