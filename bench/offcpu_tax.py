#!/usr/bin/env python3
"""bench/offcpu_tax.py: what off-CPU tracing (a BPF program on
sched_switch) costs a context-switch-heavy program, next to the floor of
any program there.

The workload is tests/workloads/pingpong: two processes passing a byte
over pipes, each round trip two blocks and two wake-ups.  Conditions, in
interleaved rounds (the order rotating):
  - none;
  - an empty sched_switch program (bench/switch_floor: returns at once),
    the floor no sched_switch hook can go under;
  - profd at its defaults (--all-processes, sampling at 99 Hz);
  - profd --off-cpu.
Measures, per condition and round:
  - CPU time (user + system) of the two processes per round trip with
    both pinned to one CPU: every switch is then from one to the other,
    nothing idles, and all the hook's time is charged to them; the
    fastest of --reps runs (other tenants only ever add time);
  - wall time per round trip of the same runs;
  - wall and CPU time per round trip on two CPUs (not pinned), one run:
    there every block idles a CPU, and how fast an idle CPU wakes (which
    sampling interrupts change) dominates the wall time;
  - BPF ns per switch (run_time_ns / run_cnt, kernel.bpf_stats_enabled
    on for one extra pinned run only: the statistics cost time of their
    own, which the CPU-time runs must not pay).
With --baseline DIR (another build's profd and profctl), that build's
profd --off-cpu is one more condition: before/after in the same rounds.
Prints a Markdown table (medians over rounds; bench/run puts it in
RESULTS.md), or JSON with --json.  Needs root.

usage: bench/offcpu_tax.py [--build DIR] [--baseline DIR] [--rounds N] [--reps N]
                           [--trips N] [--json]
"""
import argparse
import glob
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
RATE = 99
CONDS = [("none", None), ("empty sched_switch program", "floor"),
         ("profd (default)", ["--all-processes"]),
         ("profd --off-cpu", ["--all-processes", "--off-cpu"])]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def sh(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def bpf_stats(on):
    sh(["sysctl", "-q", "-w", f"kernel.bpf_stats_enabled={1 if on else 0}"])


def prog_runtime(owner, name):
    """run_time_ns and run_cnt of program `name` that process `owner`
    holds open (other profilers may be running)."""
    ids = set()
    for fd in glob.glob(f"/proc/{owner}/fdinfo/*"):
        try:
            with open(fd) as f:
                ids.update(int(l.split()[1]) for l in f if l.startswith("prog_id:"))
        except OSError:
            pass
    try:
        progs = json.loads(sh(["bpftool", "-j", "prog", "show"]).stdout or "[]")
    except json.JSONDecodeError:
        progs = []
    mine = [p for p in progs if p.get("id") in ids and p.get("name") == name]
    return (sum(p.get("run_time_ns", 0) for p in mine), sum(p.get("run_cnt", 0) for p in mine))


class Condition:
    """One condition running: nothing, the empty program, or a profd
    (the baseline build's when the label says so)."""

    def __init__(self, ctx, label, how):
        self.ctx, self.label, self.how = ctx, label, how
        self.proc, self.prog = None, None
        base = label.endswith("(baseline)")
        self.profd = ctx.base_profd if base else ctx.profd
        self.profctl = ctx.base_profctl if base else ctx.profctl

    def start(self):
        if self.how is None:
            return
        if self.how == "floor":
            self.proc = subprocess.Popen([self.ctx.floor], stdout=subprocess.PIPE, text=True)
            if self.proc.stdout.readline().strip() != "attached":
                raise RuntimeError("switch_floor did not attach")
            self.prog = "switch_floor"
            return
        self.sock = os.path.join(self.ctx.tmp, "profd.sock")
        self.log = tempfile.TemporaryFile("w+", dir=self.ctx.tmp)
        self.proc = subprocess.Popen([self.profd, "--rate", str(RATE), "--socket", self.sock,
                                      "--state-dir", os.path.join(self.ctx.tmp, "state")] + self.how,
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        for _ in range(200):
            if os.path.exists(self.sock) and self.stats():
                break
            time.sleep(0.05)
        else:
            self.log.seek(0)
            raise RuntimeError("profd did not start: " + self.log.read()[-2000:])
        time.sleep(1.5)  # past start-up (unwind tables of the running processes)
        self.prog = "on_sched_switch" if "--off-cpu" in self.how else None

    def stats(self):
        if not self.how or self.how == "floor":
            return {}
        r = sh([self.profctl, "--socket", self.sock, "--json", "stats"])
        return json.loads(r.stdout) if r.returncode == 0 else {}

    def stop(self):
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def pingpong(ctx, trips, cpu=None):
    """(wall s, CPU s) of one run, CPU pinned to `cpu` if given."""
    cmd = [ctx.pingpong, str(trips)] + ([str(cpu)] if cpu is not None else [])
    r = sh(cmd)
    if r.returncode:
        raise RuntimeError(f"{cmd}: {r.stderr}")
    w = r.stdout.split()
    return float(w[0]), float(w[-3])


def measure(ctx, c, m):
    """One round of condition c into m (lists per measure)."""
    st0 = c.stats()
    runs = [pingpong(ctx, ctx.trips, ctx.cpu) for _ in range(ctx.reps)]
    m.setdefault("wall1", []).append(min(w for w, _ in runs) / ctx.trips)
    m.setdefault("cpu1", []).append(min(u for _, u in runs) / ctx.trips)
    w2, u2 = pingpong(ctx, ctx.trips2)
    m.setdefault("wall2", []).append(w2 / ctx.trips2)
    m.setdefault("cpu2", []).append(u2 / ctx.trips2)
    if c.prog:
        bpf_stats(True)
        try:
            ns0 = prog_runtime(c.proc.pid, c.prog)
            pingpong(ctx, ctx.trips, ctx.cpu)
            ns1 = prog_runtime(c.proc.pid, c.prog)
        finally:
            bpf_stats(False)
        m.setdefault("bpf_ns", []).append(ns1[0] - ns0[0])
        m.setdefault("bpf_runs", []).append(ns1[1] - ns0[1])
    st1 = c.stats()
    cnt = m.setdefault("counters", {})
    for k, v in st1.items():
        if k.startswith("bpf_offcpu"):
            cnt[k] = cnt.get(k, 0) + v - st0.get(k, 0)


def run(ctx):
    conds = CONDS + ([("profd --off-cpu (baseline)", CONDS[-1][1])] if ctx.base_profd else [])
    res = {label: {} for label, _ in conds}
    for r in range(ctx.rounds):
        k = r % len(conds)
        for label, how in conds[k:] + conds[:k]:
            c = Condition(ctx, label, how)
            c.start()
            try:
                measure(ctx, c, res[label])
            finally:
                c.stop()
        log(f"off-cpu tax round {r + 1}/{ctx.rounds}: done")
    rows = []
    base = res["none"]
    med = statistics.median
    for label, _ in conds:
        m = res[label]
        runs = sum(m.get("bpf_runs", []))
        rows.append({
            "condition": label,
            "cpu_us_per_trip": 1e6 * med(m["cpu1"]),
            "cpu_pct": 100 * (med(m["cpu1"]) / med(base["cpu1"]) - 1),
            "cpu_ns_per_switch_added": 1e9 * (med(m["cpu1"]) - med(base["cpu1"])) / 2,
            "cpu_spread_pct": 100 * (max(m["cpu1"]) - min(m["cpu1"])) / med(m["cpu1"]),
            "wall_us_per_trip": 1e6 * med(m["wall1"]),
            "wall_pct": 100 * (med(m["wall1"]) / med(base["wall1"]) - 1),
            "wall2_us_per_trip": 1e6 * med(m["wall2"]),
            "wall2_pct": 100 * (med(m["wall2"]) / med(base["wall2"]) - 1),
            "cpu2_us_per_trip": 1e6 * med(m["cpu2"]),
            "bpf_ns_per_switch": sum(m.get("bpf_ns", [])) / runs if runs else 0,
            "switches": runs,
            "counters": m.get("counters", {}),
        })
        log(f"off-cpu tax {label}: {rows[-1]}")
    return rows


def report(ctx, rows):
    L = [f"`tests/workloads/pingpong`: two processes passing one byte over pipes, each round trip "
         f"two blocks and two wake-ups; {ctx.rounds} interleaved rounds (`bench/offcpu_tax.py`), "
         "medians over rounds. **1 CPU**: both processes pinned to one CPU, so every block is a "
         "switch straight to the other process (two switches per round trip, no idle) and all of "
         f"a hook's time is charged to them: {ctx.trips:,} round trips, the fastest of {ctx.reps} "
         "runs per round, CPU time (user + system, exact) and wall time. **2 CPUs**: not pinned, "
         f"{ctx.trips2:,} round trips, one run per round: each block idles a CPU, so the wall time "
         "measures how fast an idle CPU wakes more than any hook (sampling interrupts keep CPUs out "
         "of deep idle, which makes profd look faster than no profiler). BPF ns per switch: "
         "`run_time_ns / run_cnt` with `kernel.bpf_stats_enabled` on for one extra 1-CPU run per "
         "round only (the statistics cost time of their own). Spread: (slowest - fastest round) / "
         "median of the 1-CPU CPU time, the noise a difference must beat. The empty program is "
         "`bench/switch_floor`: a `tp_btf/sched_switch` program that returns 0, the floor of any "
         "hook there.", "",
         "| condition | CPU per round trip (1 CPU) | vs none | added per switch | spread | wall per round trip (1 CPU) | vs none | wall per round trip (2 CPUs) | vs none | BPF ns per switch |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for x in rows:
        bpf = f"{x['bpf_ns_per_switch']:.0f}" if x["switches"] else "-"
        L.append(f"| {x['condition']} | {x['cpu_us_per_trip']:.3f} us | {x['cpu_pct']:+.1f}% | "
                 f"{x['cpu_ns_per_switch_added']:+.0f} ns | {x['cpu_spread_pct']:.0f}% | "
                 f"{x['wall_us_per_trip']:.3f} us | "
                 f"{x['wall_pct']:+.1f}% | {x['wall2_us_per_trip']:.2f} us | {x['wall2_pct']:+.1f}% | "
                 f"{bpf} |")
    c = next((x["counters"] for x in rows if any(x["counters"].values())), {})
    if c:
        L += ["", "Off-CPU counters over the `--off-cpu` runs (`profctl stats`): " +
              ", ".join(f"{k} {v:,}" for k, v in sorted(c.items())) + "."]
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--baseline", help="another build directory: its profd --off-cpu too")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=3, help="1-CPU runs per condition and round")
    ap.add_argument("--trips", type=int, default=200000, help="round trips of a 1-CPU run")
    ap.add_argument("--trips2", type=int, default=50000, help="round trips of a 2-CPU run")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/offcpu_tax.py: needs root (BPF)")

    class Ctx:
        pass
    ctx = Ctx()
    b = os.path.abspath(a.build)
    ctx.profd, ctx.profctl = os.path.join(b, "profd"), os.path.join(b, "profctl")
    ctx.floor = os.path.join(b, "bench", "switch_floor")
    base = os.path.abspath(a.baseline) if a.baseline else None
    ctx.base_profd = os.path.join(base, "profd") if base else None
    ctx.base_profctl = os.path.join(base, "profctl") if base else None
    ctx.pingpong = os.path.join(b, "tests", "workloads", "pingpong")
    ctx.rounds, ctx.reps, ctx.trips, ctx.trips2 = a.rounds, a.reps, a.trips, a.trips2
    ctx.cpu = os.cpu_count() - 1
    ctx.stats_were_on = sh(["sysctl", "-n", "kernel.bpf_stats_enabled"]).stdout.strip() == "1"
    ctx.tmp = tempfile.mkdtemp(prefix="profd-offcpu.")
    bpf_stats(False)
    try:
        rows = run(ctx)
    finally:
        bpf_stats(ctx.stats_were_on)
        shutil.rmtree(ctx.tmp, ignore_errors=True)
    print(json.dumps(rows, indent=1) if a.json else report(ctx, rows))


if __name__ == "__main__":
    main()
