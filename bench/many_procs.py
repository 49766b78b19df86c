#!/usr/bin/env python3
"""bench/many_procs.py: profd with 10,000 live processes known to it.

bench/many_procs.c forks N processes that each run for a few ms (profd,
sampling every process at 999 Hz, sees each at least once) and then sleep.
With them all tracked, and then again with none (a fresh profd), it
measures side by side:
  - profd's RSS, processes tracked;
  - `profctl stats` and `profctl list` wall time (median and worst);
  - profd's userspace CPU per sample while a 2-thread Python process spins
    (schedstat of all its threads over samples received);
  - profd's CPU per second when nothing but the sleepers exist (the tick);
  - the longest housekeeping tick and the longest single event.
Prints a Markdown table; `bench/run --only many_procs` runs it alone.

usage: bench/many_procs.py [--build DIR] [--procs N] [--seconds N]
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, os.path.join(ROOT, "bench"))
from steady_state import WORKLOAD, cpu_ns  # noqa: E402


def ctl(build, sock, *args):
    t0 = time.monotonic()
    out = subprocess.run([f"{build}/profctl", "--socket", sock, *args], capture_output=True,
                         text=True, timeout=60)
    return time.monotonic() - t0, out


def stats(build, sock):
    _, out = ctl(build, sock, "--json", "stats")
    return json.loads(out.stdout)


def start_profd(build, tmp, procs):
    sock = f"{tmp}/sock"
    d = subprocess.Popen([f"{build}/profd", "--config", "/dev/null", "--rate", "999",
                          "--max-procs", str(max(procs * 2, 1000)), "--socket", sock,
                          "--state-dir", tmp], stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(sock):
            try:
                stats(build, sock)
                return d, sock
            except (subprocess.CalledProcessError, json.JSONDecodeError):
                pass
        time.sleep(0.1)
    d.kill()
    sys.exit("many_procs: profd did not start")


def spawn(tmp, n, spin_ms):
    exe = f"{tmp}/many_procs"
    subprocess.run(["cc", "-O2", "-o", exe, os.path.join(ROOT, "bench", "many_procs.c")],
                   check=True)
    p = subprocess.Popen([exe, str(n), str(spin_ms)], stdout=subprocess.PIPE, text=True)
    started = int(p.stdout.readline() or 0)
    return p, started


def wait_tracked(build, sock, want, limit):
    end, last, n = time.monotonic() + limit, -1, 0
    while time.monotonic() < end:
        n = stats(build, sock)["processes_live"]
        if n >= want or n == last:
            break
        last = n
        time.sleep(2)
    return n


def latency(build, sock, what, reps):
    times = [ctl(build, sock, *what)[0] * 1000 for _ in range(reps)]
    return statistics.median(times), max(times)


def per_sample(build, sock, pid, warm, secs):
    time.sleep(warm)
    s0, c0 = stats(build, sock), cpu_ns(pid)
    time.sleep(secs)
    s1, c1 = stats(build, sock), cpu_ns(pid)
    n = s1["samples_received"] - s0["samples_received"]
    return (c1 - c0) / 1000 / max(n, 1), n


def idle_cpu(pid, secs):
    c0 = cpu_ns(pid)
    time.sleep(secs)
    return (cpu_ns(pid) - c0) / 1e6 / secs


def measure(build, procs, secs, spin_ms):
    tmp = tempfile.mkdtemp(prefix="profd-many.")
    d, sock = start_profd(build, tmp, procs)
    sp, started = None, 0
    r = {"procs": procs}
    try:
        if procs:
            t0 = time.monotonic()
            sp, started = spawn(tmp, procs, spin_ms)
            wait_tracked(build, sock, started, 120)
            r["spawn_s"] = time.monotonic() - t0
        r["started"], r["live"] = started, stats(build, sock)["processes_live"]
        r["idle_ms_per_s"] = idle_cpu(d.pid, secs)
        r["stats_ms"] = latency(build, sock, ["stats"], 20)
        r["list_ms"] = latency(build, sock, ["list"], 5)
        wl = subprocess.Popen([sys.executable, "-c", WORKLOAD])
        try:
            r["us_per_sample"], r["samples"] = per_sample(build, sock, d.pid, 3, secs)
        finally:
            wl.kill()
            wl.wait()
        s = stats(build, sock)
        r["rss_mib"] = s["rss_bytes"] / 2**20
        r["tick_ms_max"] = s["ingest_tick_ns_max"] / 1e6
        r["event_ms_max"] = s["ingest_event_ns_max"] / 1e6
        r["hist_ms_max"] = s["ingest_history_tick_ns_max"] / 1e6
        r["lock_wait_ms_max"] = s["state_lock_wait_ns_max"] / 1e6
        r["dropped"] = s.get("samples_dropped_proc_table_full", 0)
    finally:
        if sp:
            os.killpg(sp.pid, signal.SIGKILL)
            sp.wait()
        d.terminate()
        d.wait()
        subprocess.run(["rm", "-rf", tmp])
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--procs", type=int, default=10000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--spin-ms", type=float, default=5)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/many_procs.py: needs root")
    rows = [measure(a.build, 0, a.seconds, a.spin_ms),
            measure(a.build, a.procs, a.seconds, a.spin_ms)]
    print("| sleeping processes | live in profd | RSS MiB | stats ms (median / worst of 20) | "
          "list ms (median / worst of 5) | userspace us/sample (2-thread Python, 999 Hz) | "
          "idle CPU ms/s | longest tick ms | longest history tick ms | longest event ms | "
          "longest wait for the state lock ms |")
    print("|---" * 11 + "|")
    for r in rows:
        print(f"| {r['started']} | {r['live']} | {r['rss_mib']:.0f} | "
              f"{r['stats_ms'][0]:.1f} / {r['stats_ms'][1]:.1f} | "
              f"{r['list_ms'][0]:.1f} / {r['list_ms'][1]:.1f} | "
              f"{r['us_per_sample']:.2f} ({r['samples']} samples) | {r['idle_ms_per_s']:.2f} | "
              f"{r['tick_ms_max']:.1f} | {r['hist_ms_max']:.1f} | {r['event_ms_max']:.2f} | "
              f"{r['lock_wait_ms_max']:.1f} |")


if __name__ == "__main__":
    main()
