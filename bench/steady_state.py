#!/usr/bin/env python3
"""bench/steady_state.py: what one sample costs profd once a process's
stacks are known, against perf on the same process in the same run.

A stable 2-thread Python process (the interpreter's own frames, no new
code after the start) is profiled at 99 and 999 Hz, by profd (--pid) and
then by `perf record -g` (frame pointers), each for --seconds after a
warm-up.  Per sample:
  - profd userspace: CPU time of all its threads (schedstat, ns exact) over
    the samples it received;
  - profd BPF: run_time_ns / run_cnt of its sampling program
    (kernel.bpf_stats_enabled);
  - perf userspace: CPU time of the perf process over the samples it wrote.
Prints a Markdown table; bench/run includes it in RESULTS.md.

With --baseline DIR (another build's profd and profctl), that build runs
too, right before this one at each rate, and its userspace us/sample is
shown next to this build's: before/after under the same load.

With --rounds N each build runs N times per rate, interleaved, and the
table shows medians (userspace: median and the range over rounds): these
machines are noisy, one run of 20 s moves by a third.

usage: bench/steady_state.py [--build DIR] [--baseline DIR] [--rounds N] [--seconds N] [--rates 99,999]
"""
import argparse
import glob
import json
import statistics
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOAD = """
import threading, time
def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def spin():
    while True:
        leaf(5000)
threading.Thread(target=spin, daemon=True).start()
spin()
"""


def cpu_ns(pid):
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def bpf_prog(owner, name):
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    ids = set()
    for fd in glob.glob(f"/proc/{owner}/fdinfo/*"):
        try:
            with open(fd) as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    ns = cnt = 0
    for p in json.loads(out.stdout or "[]"):
        if p.get("name") == name and p.get("id") in ids:
            ns += p.get("run_time_ns", 0)
            cnt += p.get("run_cnt", 0)
    return ns, cnt


def stats(build, sock):
    out = subprocess.run([f"{build}/profctl", "--socket", sock, "--json", "stats"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def profd_run(build, pid, rate, warm, secs):
    tmp = tempfile.mkdtemp()
    sock = f"{tmp}/sock"
    d = subprocess.Popen([f"{build}/profd", "--config", "/dev/null", "--pid", str(pid),
                          "--rate", str(rate), "--socket", sock, "--state-dir", tmp],
                         stderr=subprocess.DEVNULL)
    for _ in range(100):
        if os.path.exists(sock):
            try:
                stats(build, sock)
                break
            except subprocess.CalledProcessError:
                pass
        time.sleep(0.1)
    time.sleep(warm)
    s0, c0, b0 = stats(build, sock), cpu_ns(d.pid), bpf_prog(d.pid, "on_cpu_sample")
    time.sleep(secs)
    s1, c1, b1 = stats(build, sock), cpu_ns(d.pid), bpf_prog(d.pid, "on_cpu_sample")
    d.terminate()
    d.wait()
    n = s1["samples_received"] - s0["samples_received"]
    memo = s1["samples_counted_by_memo"] - s0["samples_counted_by_memo"]
    bpf_n = b1[1] - b0[1]
    return {
        "samples": n,
        "user_us": (c1 - c0) / 1000 / max(n, 1),
        "bpf_us": (b1[0] - b0[0]) / 1000 / max(bpf_n, 1),
        "memo": 100.0 * memo / max(n, 1),
    }


def perf_run(pid, rate, warm, secs):
    tmp = tempfile.mkdtemp()
    data = f"{tmp}/perf.data"
    p = subprocess.Popen(["perf", "record", "-q", "-F", str(rate), "-g", "-p", str(pid),
                          "-o", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(warm)
    c0, t0 = cpu_ns(p.pid), time.monotonic()
    time.sleep(secs)
    c1, t1 = cpu_ns(p.pid), time.monotonic()
    p.send_signal(2)
    p.wait()
    total = 0
    rep = subprocess.run(["perf", "script", "-i", data, "-F", "time"], capture_output=True,
                         text=True).stdout.split()
    # Samples taken while CPU time was measured, from their timestamps.
    times = [float(x.rstrip(":")) for x in rep if x.rstrip(":").replace(".", "").isdigit()]
    if times:
        end = max(times)
        total = sum(1 for x in times if x >= end - (t1 - t0))
    return {"samples": total, "user_us": (c1 - c0) / 1000 / max(total, 1)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--warm", type=float, default=5)
    ap.add_argument("--rates", default="99,999")
    ap.add_argument("--baseline", help="another build directory, measured alongside")
    ap.add_argument("--rounds", type=int, default=1,
                    help="runs of each build per rate, interleaved; medians shown")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/steady_state.py: needs root")
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1")
    wl = subprocess.Popen([sys.executable, "-c", WORKLOAD])
    rows = []
    try:
        time.sleep(1)
        for rate in [int(r) for r in a.rates.split(",")]:
            bases, prs = [], []
            for _ in range(max(a.rounds, 1)):
                if a.baseline:
                    bases.append(profd_run(a.baseline, wl.pid, rate, a.warm, a.seconds))
                prs.append(profd_run(a.build, wl.pid, rate, a.warm, a.seconds))
            pf = perf_run(wl.pid, rate, a.warm, a.seconds) if have_perf() else None
            rows.append((rate, median_run(prs), pf, median_run(bases) if bases else None))
    finally:
        wl.kill()
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("0")
    before = " baseline userspace us/sample |" if a.baseline else ""
    print("| rate | profd samples | profd userspace us/sample |" + before +
          " profd BPF us/sample | profd total us/sample | counted by memo | perf samples |"
          " perf userspace us/sample |")
    print("|---" * (8 + bool(a.baseline)) + "|")
    for rate, pr, pf, base in rows:
        perf = f"{pf['samples']} | {pf['user_us']:.2f}" if pf else "- | -"
        b = f" {base['user_us']:.2f}{base['user_range']} |" if base else ""
        print(f"| {rate} Hz | {pr['samples']} | {pr['user_us']:.2f}{pr['user_range']} |{b} {pr['bpf_us']:.2f} | "
              f"{pr['user_us'] + pr['bpf_us']:.2f} | {pr['memo']:.1f}% | {perf} |")


def median_run(runs):
    """Each figure's median over the rounds; user_us also as "min-max"."""
    out = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    out["samples"] = int(out["samples"])
    lo, hi = min(r["user_us"] for r in runs), max(r["user_us"] for r in runs)
    out["user_range"] = f" ({lo:.2f}-{hi:.2f})" if len(runs) > 1 else ""
    return out


def have_perf():
    return subprocess.run(["sh", "-c", "command -v perf"], capture_output=True).returncode == 0


if __name__ == "__main__":
    main()
