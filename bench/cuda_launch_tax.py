#!/usr/bin/env python3
"""bench/cuda_launch_tax.py: what CUDA tracing costs a launch-heavy
training loop.

The workload is bench/cuda_launch_loop.py: Python work then one
cudaLaunchKernel, through ctypes into bench/cuda_launch_stub.c built as
libcudart.so.12 (its entry points return at once, so a launch costs what
the call and any tracing cost, as a GPU's asynchronous launch nearly
does).  Two shapes: ~40 us of Python work per launch (about 20,000
launches a second on these VMs: a small model's training step) and
launches back to back (the worst case, the cost of one traced call).
Conditions, in interleaved rounds (the order rotating):
  - none;
  - profd --all-processes --gpu on: the default on a host with NVIDIA's
    driver (--gpu auto turns on there): synchronizations, copies and
    allocations traced, launches not;
  - profd --all-processes --gpu on --cuda-launches: launches traced too.
Measures per condition and round: the loop's CPU time (user + system,
its own os.times) per launch, and profd's own CPU time (/proc/PID/stat)
over the run.  Prints a Markdown table (medians over rounds), or JSON
with --json.  Needs root and a C compiler.

usage: bench/cuda_launch_tax.py [--build DIR] [--rounds N] [--seconds S] [--work-us US] [--json]
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
CONDS = [("none", None),
         ("profd --gpu on (the default on a GPU host)", ["--gpu", "on"]),
         ("profd --gpu on --cuda-launches", ["--gpu", "on", "--cuda-launches"])]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def cpu_ticks(pid):
    """utime + stime of pid, in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        w = f.read().rsplit(")", 1)[1].split()
    return int(w[11]) + int(w[12])


class Profd:
    def __init__(self, ctx, args):
        self.ctx, self.args, self.proc = ctx, args, None

    def __enter__(self):
        if self.args is None:
            return self
        self.sock = os.path.join(self.ctx.tmp, "profd.sock")
        self.log = tempfile.TemporaryFile("w+", dir=self.ctx.tmp)
        self.proc = subprocess.Popen([self.ctx.profd, "--all-processes", "--config", "/dev/null",
                                      "--socket", self.sock,
                                      "--state-dir", os.path.join(self.ctx.tmp, "state")] + self.args,
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        for _ in range(200):
            if os.path.exists(self.sock) and self.stats():
                break
            time.sleep(0.05)
        else:
            self.log.seek(0)
            raise RuntimeError("profd did not start: " + self.log.read()[-2000:])
        time.sleep(1.0)  # past start-up
        return self

    def stats(self):
        if not self.proc:
            return {}
        r = subprocess.run([self.ctx.profctl, "--socket", self.sock, "--json", "stats"],
                           capture_output=True, text=True)
        return json.loads(r.stdout) if r.returncode == 0 else {}

    def ticks(self):
        return cpu_ticks(self.proc.pid) if self.proc else 0

    def __exit__(self, *exc):
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def loop(ctx, iters, seconds):
    r = subprocess.run([sys.executable, os.path.join(BENCH, "cuda_launch_loop.py"), ctx.lib,
                        str(seconds), str(iters)], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"cuda_launch_loop.py: {r.stderr[-2000:]}")
    return json.loads(r.stdout)


def measure(ctx, args, m):
    hz = os.sysconf("SC_CLK_TCK")
    with Profd(ctx, args) as p:
        # A first process of the loop, not measured: profd meets the
        # program and the library once (tables, symbols, probes), as a
        # long-running job pays once at its start.
        loop(ctx, ctx.work_iters, 2)
        for shape, iters, seconds in (("step", ctx.work_iters, ctx.seconds),
                                      ("bare", 0, ctx.seconds / 2)):
            st0, t0 = p.stats(), p.ticks()
            x = loop(ctx, iters, seconds)
            t1, st1 = p.ticks(), p.stats()
            m.setdefault(shape + "_cpu_us", []).append(1e6 * x["cpu_s"] / x["launches"])
            m.setdefault(shape + "_rate", []).append(x["launches"] / x["wall_s"])
            m.setdefault(shape + "_profd_pct", []).append(100 * (t1 - t0) / hz / x["wall_s"])
            traced = sum(v - st0.get(k, 0) for k, v in st1.items()
                         if k == "bpf_cuda_calls")
            m.setdefault(shape + "_traced", []).append(traced / max(1, x["launches"]))


def run(ctx):
    res = {label: {} for label, _ in CONDS}
    for r in range(ctx.rounds):
        k = r % len(CONDS)
        for label, args in CONDS[k:] + CONDS[:k]:
            measure(ctx, args, res[label])
        log(f"cuda launch tax round {r + 1}/{ctx.rounds}: done")
    med = statistics.median
    base = res["none"]
    rows = []
    for label, _ in CONDS:
        m = res[label]
        row = {"condition": label}
        for shape in ("step", "bare"):
            c = m[shape + "_cpu_us"]
            row[shape] = {
                "cpu_us_per_launch": med(c),
                "vs_none_pct": 100 * (med(c) / med(base[shape + "_cpu_us"]) - 1),
                "spread_pct": 100 * (max(c) - min(c)) / med(c),
                "launches_per_s": med(m[shape + "_rate"]),
                "profd_cpu_pct": med(m[shape + "_profd_pct"]),
                "traced_per_launch": med(m[shape + "_traced"]),
            }
        rows.append(row)
        log(f"cuda launch tax {label}: {row}")
    return rows


def report(ctx, rows):
    L = [f"`bench/cuda_launch_tax.py --rounds {ctx.rounds} --seconds {ctx.seconds:g} "
         f"--work-us {ctx.work_us:g}`: a Python loop calling `cudaLaunchKernel` through ctypes "
         "into a `libcudart.so.12` stand-in that returns at once (`bench/cuda_launch_stub.c`). "
         f"**Step**: ~{ctx.work_us:g} us of Python work per launch; **bare**: launches back to "
         "back. CPU per launch: the loop's own user + system time over its launches, median of "
         "the interleaved rounds; spread: (slowest - fastest round) / median, the noise a "
         "difference must beat. profd CPU: profd's own user + system time over the run, % of "
         "one CPU.", "",
         "| condition | step: CPU per launch | vs none | spread | launches/s | profd CPU | "
         "bare: CPU per launch | vs none | profd CPU |",
         "|---|---|---|---|---|---|---|---|---|"]
    for x in rows:
        s, b = x["step"], x["bare"]
        L.append(f"| {x['condition']} | {s['cpu_us_per_launch']:.2f} us | {s['vs_none_pct']:+.1f}% | "
                 f"{s['spread_pct']:.1f}% | {s['launches_per_s']:,.0f} | {s['profd_cpu_pct']:.1f}% | "
                 f"{b['cpu_us_per_launch']:.3f} us | {b['vs_none_pct']:+.0f}% | "
                 f"{b['profd_cpu_pct']:.1f}% |")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=8.0, help="of each step loop")
    ap.add_argument("--work-us", type=float, default=40.0, help="Python work per launch")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/cuda_launch_tax.py: needs root (BPF)")

    class Ctx:
        pass
    ctx = Ctx()
    b = os.path.abspath(a.build)
    ctx.profd, ctx.profctl = os.path.join(b, "profd"), os.path.join(b, "profctl")
    ctx.rounds, ctx.seconds, ctx.work_us = a.rounds, a.seconds, a.work_us
    ctx.tmp = tempfile.mkdtemp(prefix="profd-cudatax.")
    try:
        ctx.lib = os.path.join(ctx.tmp, "libcudart.so.12")
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-O2", "-shared", "-fPIC", "-Wl,-soname,libcudart.so.12", "-o", ctx.lib,
                        os.path.join(BENCH, "cuda_launch_stub.c")], check=True)
        ctx.work_iters = int(subprocess.run(
            [sys.executable, os.path.join(BENCH, "cuda_launch_loop.py"), "--calibrate",
             str(ctx.work_us)], capture_output=True, text=True, check=True).stdout)
        rows = run(ctx)
    finally:
        shutil.rmtree(ctx.tmp, ignore_errors=True)
    print(json.dumps(rows, indent=1) if a.json else report(ctx, rows))


if __name__ == "__main__":
    main()
