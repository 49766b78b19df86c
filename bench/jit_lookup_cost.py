#!/usr/bin/env python3
"""bench/jit_lookup_cost.py: what naming and crossing JIT code (perf maps,
jitdump, CPython's perf trampolines) costs the samples that are NOT in JIT
code, this build against another (--baseline: one without that work).

The machine runs, the whole time, a native C program (cpu_split: code
from files, unwound by tables) and a JIT stand-in
(tests/workloads/jit/chain.c: code in anonymous memory named in
/tmp/perf-PID.map, crossed by frame pointers).  In interleaved rounds,
the order alternating, each build's profd runs system-wide at --rate for
--seconds after a settling second, and gives:
  - profd's CPU (user + system, /proc/PID/stat) per sample aggregated;
  - BPF ns per run of the sampling program (run_time_ns / run_cnt,
    kernel.bpf_stats_enabled on for both builds alike);
  - the share of cpu_split's samples that reach main (unchanged, or the
    comparison means nothing).
Prints a Markdown table: median and range over the rounds per build.
Needs root, cc, and a build of each (BUILD/profd, BUILD/profctl,
BUILD/tests/workloads/cpu_split).

usage: bench/jit_lookup_cost.py --baseline DIR [--build DIR] [--rounds N]
                                [--seconds S] [--rate HZ]
"""
import argparse
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from offcpu_tax import prog_runtime  # run_time_ns, run_cnt of a program a process holds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def build_jit(tmp):
    """The JIT stand-in, built as tests/e2e/test_jit_unwind.sh builds it."""
    src = os.path.join(ROOT, "tests", "workloads", "jit")
    obj, exe = os.path.join(tmp, "jitcode.o"), os.path.join(tmp, "jit")
    for cmd in (["cc", "-O1", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer",
                 "-fno-stack-protector", "-c", "-o", obj, os.path.join(src, "jitcode.c")],
                ["cc", "-O2", "-fomit-frame-pointer", "-fno-optimize-sibling-calls", "-o", exe,
                 os.path.join(src, "chain.c"), obj]):
        r = sh(cmd)
        if r.returncode:
            sys.exit("building the JIT stand-in failed: " + r.stderr)
    return exe


def one_run(build, args, tmp, split_pid):
    """One profd of build for args.seconds: (cpu us/sample, bpf ns/run, reach %)."""
    sock = os.path.join(tmp, "profd.sock")
    log = open(os.path.join(tmp, "profd.log"), "w")
    p = subprocess.Popen([os.path.join(build, "profd"), "--config", "/dev/null", "--all-processes",
                          "--no-history", "--rate", str(args.rate), "--socket", sock,
                          "--state-dir", os.path.join(tmp, "state")],
                         stdout=subprocess.DEVNULL, stderr=log)
    ctl = os.path.join(build, "profctl")

    def stats():
        r = sh([ctl, "--socket", sock, "--json", "stats"])
        return json.loads(r.stdout) if r.returncode == 0 else None

    try:
        for _ in range(200):
            if os.path.exists(sock) and stats():
                break
            time.sleep(0.05)
        else:
            sys.exit("profd of %s did not start" % build)
        time.sleep(1.0)
        s0, c0, b0, t0 = stats(), cpu_seconds(p.pid), prog_runtime(p.pid, "on_cpu_sample"), time.time()
        time.sleep(args.seconds)
        s1, c1, b1 = stats(), cpu_seconds(p.pid), prog_runtime(p.pid, "on_cpu_sample")
        since = "%ds" % (int(time.time() - t0) + 1)
        folded = sh([ctl, "--socket", sock, "dump", "--pid", str(split_pid), "--since", since]).stdout
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
        log.close()
    samples = s1["samples_aggregated"] - s0["samples_aggregated"]
    runs = b1[1] - b0[1]
    total = reach = 0
    for line in folded.splitlines():
        stack, _, n = line.rpartition(" ")
        total += int(n)
        reach += int(n) if ";main;" in stack or stack.startswith("main;") else 0
    return ((c1 - c0) * 1e6 / max(samples, 1), (b1[0] - b0[0]) / max(runs, 1),
            100.0 * reach / max(total, 1))


def fmt(xs, unit, digits=1):
    return "%.*f %s (%.*f-%.*f)" % (digits, statistics.median(xs), unit, digits, min(xs), digits,
                                     max(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--baseline", required=True, help="another build to compare with")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rate", type=int, default=999)
    args = ap.parse_args()
    if os.geteuid():
        sys.exit("needs root")
    builds = {"this build": os.path.abspath(args.build), "baseline": os.path.abspath(args.baseline)}
    tmp = tempfile.mkdtemp(prefix="jit-lookup-")
    secs = str(int(args.rounds * 2 * (args.seconds + 4) + 60))
    split = subprocess.Popen([os.path.join(args.build, "tests", "workloads", "cpu_split"), secs],
                             stdout=subprocess.DEVNULL)
    jit = subprocess.Popen([build_jit(tmp), secs, "JIT:bench"], stdout=subprocess.PIPE, text=True)
    jit.stdout.readline()  # "ready": its perf map is written
    sh(["sysctl", "-q", "-w", "kernel.bpf_stats_enabled=1"])
    res = {k: ([], [], []) for k in builds}
    try:
        for r in range(args.rounds):
            order = list(builds) if r % 2 == 0 else list(reversed(builds))
            for name in order:
                out = one_run(builds[name], args, tmp, split.pid)
                for lst, v in zip(res[name], out):
                    lst.append(v)
                print("round %d %s: %.1f us/sample, %.0f ns/run, %.1f%% reach main" %
                      ((r + 1, name) + out), file=sys.stderr, flush=True)
    finally:
        sh(["sysctl", "-q", "-w", "kernel.bpf_stats_enabled=0"])
        for p in (split, jit):
            p.kill()
            p.wait()
        for f in glob.glob("/tmp/perf-%d.map" % jit.pid):
            os.unlink(f)
    print("| build | profd CPU per sample | BPF time per sample | cpu_split samples reaching main |")
    print("|---|---|---|---|")
    for name, (cpu, bpf, reach) in res.items():
        print("| %s | %s | %s | %s |" % (name, fmt(cpu, "us"), fmt(bpf, "ns", 0), fmt(reach, "%")))
    print("\nMedian (range) over %d interleaved rounds of %g s at %d Hz, a native C spinner and a "
          "JIT stand-in with a perf map running throughout." % (args.rounds, args.seconds, args.rate))


if __name__ == "__main__":
    main()
