#!/usr/bin/env python3
"""bench/cuda_launch_names.py: what naming each CUDA launch by its kernel
costs, side by side with a build from before (--baseline).

The workload is bench/cuda_launch_names.c: 200,000 launches of one kind
against bench/cuda_launch_stub.c built as libcudart.so.12 and libcuda.so.1
(entry points that return at once): 'stub' as nvcc 13 launches (from the
kernel's host stub, passing a heap handle), 'driver' (cuLaunchKernel of a
cuModuleGetFunction handle), 'legacy' (cudaLaunchKernel(host function)).
Under profd --gpu on --cuda-launches of each build, in interleaved rounds
(the order rotating), per kind: the loop's CPU per launch (its own
getrusage), profd's CPU per launch (/proc/PID/stat, from the loop's start
until profd has taken every event), events lost to a full ring, and the
launches whose leaf names a kernel ("kernel X", not "kernel [..]").
Prints a Markdown table of medians with the spread ((max - min) / median),
or JSON with --json.  Needs root and a C compiler.

usage: bench/cuda_launch_names.py --baseline BUILD [--baseline-label COMMIT] [--build DIR]
                                  [--rounds N] [--launches N] [--json]
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from cuda_launch_tax import cpu_ticks  # utime + stime, one reader for both benches

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
KINDS = ("stub", "driver", "legacy")


class Profd:
    def __init__(self, build, tmp):
        self.profd, self.profctl = os.path.join(build, "profd"), os.path.join(build, "profctl")
        self.tmp, self.sock = tmp, os.path.join(tmp, "profd.sock")

    def __enter__(self):
        self.log = tempfile.TemporaryFile("w+", dir=self.tmp)
        self.proc = subprocess.Popen(
            [self.profd, "--config", "/dev/null", "--socket", self.sock, "--state-dir",
             os.path.join(self.tmp, "state"), "--gpu", "on", "--cuda-launches"],
            stdout=subprocess.DEVNULL, stderr=self.log)
        for _ in range(600):  # 30 s: a loaded machine starts it slowly
            if os.path.exists(self.sock) and self.stats():
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.log.seek(0)
        raise RuntimeError("profd did not start: " + self.log.read()[-2000:])

    def ctl(self, *args):
        return subprocess.run([self.profctl, "--socket", self.sock] + list(args),
                              capture_output=True, text=True)

    def stats(self):
        r = self.ctl("--json", "stats")
        return json.loads(r.stdout) if r.returncode == 0 else {}

    def drained(self):
        """Until every event BPF sent has been taken (at most 60 s)."""
        for _ in range(600):
            s = self.stats()
            if s.get("gpu_events_received", 0) + s.get("cuda_kernel_handle_events", 0) >= \
                    s.get("bpf_gpu_events_sent", 0) + s.get("bpf_cuda_kernel_handle_events", 0):
                return s
            time.sleep(0.1)
        return self.stats()

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        shutil.rmtree(os.path.join(self.tmp, "state"), ignore_errors=True)


def named(profd, pid):
    """(launches whose leaf names a kernel, all launches) of pid."""
    r = profd.ctl("dump", "--pid", str(pid), "--type", "cuda-calls")
    good = total = 0
    for line in r.stdout.splitlines():
        stack, _, n = line.rpartition(" ")
        if "Launch" not in stack:
            continue
        total += int(n)
        leaf = stack.rsplit(";", 1)[-1]
        good += int(n) if leaf.startswith("kernel ") and not leaf.startswith("kernel [") else 0
    return good, total


def measure(ctx, build, kind, m):
    hz = os.sysconf("SC_CLK_TCK")
    with Profd(build, ctx.tmp) as p:
        # Unmeasured first: profd meets the program and libraries (tables,
        # symbols, probes), as a long job pays once at its start.  The
        # probes come when profd has read a process's maps: until they
        # trace, again (an untraced run lasts a few milliseconds).
        for _ in range(100):
            subprocess.run([ctx.loop, kind, "10000"], check=True, capture_output=True)
            if p.drained().get("bpf_cuda_calls", 0) >= 10000:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"{kind}: profd traces no launch")
        s0, t0 = p.stats(), cpu_ticks(p.proc.pid)
        r = subprocess.Popen([ctx.loop, kind, str(ctx.launches)], stdout=subprocess.PIPE, text=True)
        out = r.communicate()[0].split()
        s1 = p.drained()
        t1 = cpu_ticks(p.proc.pid)
        n, cpu = int(out[1]), float(out[3])
        m.setdefault("loop_us", []).append(1e6 * cpu / n)
        m.setdefault("profd_us", []).append(1e6 * (t1 - t0) / hz / n)
        m.setdefault("lost", []).append(s1.get("bpf_gpu_events_dropped_ringbuf_full", 0) -
                                        s0.get("bpf_gpu_events_dropped_ringbuf_full", 0))
        good, total = named(p, r.pid)
        m.setdefault("named_pct", []).append(100.0 * good / max(1, total))
    print(f"  {'this build' if build == ctx.build else 'baseline'} {kind}: " +
          " ".join(f"{k}={v[-1]:.3f}" for k, v in m.items()), file=sys.stderr, flush=True)


def run(ctx):
    builds = [(ctx.baseline_label, ctx.baseline), ("this build", ctx.build)]
    res = {(b, k): {} for b, _ in builds for k in KINDS}
    for rnd in range(ctx.rounds):
        order = builds[rnd % 2:] + builds[:rnd % 2]
        for label, build in order:
            for kind in KINDS:
                measure(ctx, build, kind, res[(label, kind)])
        print(f"cuda launch names round {rnd + 1}/{ctx.rounds}: done", file=sys.stderr, flush=True)
    rows = []
    med = statistics.median
    for kind in KINDS:
        for label, _ in builds:
            m = res[(label, kind)]
            row = {"kind": kind, "build": label}
            for k in ("loop_us", "profd_us", "named_pct", "lost"):
                row[k] = med(m[k])
                row[k + "_spread_pct"] = 100 * (max(m[k]) - min(m[k])) / med(m[k]) if med(m[k]) else 0
            rows.append(row)
    return rows


def report(ctx, rows):
    L = [f"`bench/cuda_launch_names.py --rounds {ctx.rounds} --launches {ctx.launches}`, "
         "medians (spread = (max - min) / median over rounds):", "",
         "| launch | build | loop CPU/launch | spread | profd CPU/launch | spread | lost | named |",
         "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        L.append(f"| {r['kind']} | {r['build']} | {r['loop_us']:.2f} us | "
                 f"{r['loop_us_spread_pct']:.0f}% | {r['profd_us']:.2f} us | "
                 f"{r['profd_us_spread_pct']:.0f}% | {r['lost']:.0f} | {r['named_pct']:.1f}% |")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--baseline", required=True, help="build dir of the code to compare with")
    ap.add_argument("--baseline-label", default="baseline", help="its name in the table (a commit)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--launches", type=int, default=200000)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/cuda_launch_names.py: needs root (BPF)")

    class Ctx:
        pass
    ctx = Ctx()
    ctx.build, ctx.baseline = os.path.abspath(a.build), os.path.abspath(a.baseline)
    ctx.baseline_label = "before (%s)" % a.baseline_label
    ctx.rounds, ctx.launches = a.rounds, a.launches
    ctx.tmp = tempfile.mkdtemp(prefix="profd-cudanames.")
    try:
        cc = os.environ.get("CC", "cc")
        stub = os.path.join(BENCH, "cuda_launch_stub.c")
        for soname, api in (("libcudart.so.12", []), ("libcuda.so.1", ["-DDRIVER_API"])):
            subprocess.run([cc, "-O2", "-shared", "-fPIC", "-Wl,-soname," + soname, "-o",
                            os.path.join(ctx.tmp, soname), stub] + api, check=True)
        ctx.loop = os.path.join(ctx.tmp, "cuda_launch_names")
        subprocess.run([cc, "-O2", "-g", "-fno-omit-frame-pointer", "-o", ctx.loop,
                        os.path.join(BENCH, "cuda_launch_names.c"),
                        os.path.join(ctx.tmp, "libcudart.so.12"),
                        os.path.join(ctx.tmp, "libcuda.so.1"), "-Wl,-rpath," + ctx.tmp],
                       check=True)
        rows = run(ctx)
    finally:
        shutil.rmtree(ctx.tmp, ignore_errors=True)
    print(json.dumps(rows, indent=1) if a.json else report(ctx, rows))


if __name__ == "__main__":
    main()
