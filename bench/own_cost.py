#!/usr/bin/env python3
"""bench/own_cost.py: what profd costs by running all the time, this build
beside a baseline build, in the same run.

For each build, `profd --all-processes --no-history` with the default
options otherwise (--config /dev/null: no config file of the machine's):
  - idle: started, left --settle s for its start-up work (the tables of
    the processes already running), then its CPU over --idle-seconds while
    nothing is started; its resident memory and threads after;
  - 99 Hz and 999 Hz: the same with a 2-thread Python job running, CPU
    over --seconds divided by the samples profd received meanwhile.
CPU is all of profd's threads' run time from /proc/PID/task/*/schedstat
(ns, not the 10 ms ticks of /proc/PID/stat); samples_received comes from
`stats` asked over the control socket by this process, so no profctl is
started (and sampled, and unwound) inside a window.  The builds alternate,
the first of each round in turn, --rounds times; the table shows each
round's figure and the median.  With this build's threads named, the CPU
of each thread is shown too, and the memory by kind (smaps).

usage: bench/own_cost.py [--build DIR] [--baseline DIR ...] [--rounds N]
                         [--idle-seconds N] [--seconds N] [--settle N]
"""
import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e", "tools"))
from profd_wire import read_answer, request_bytes  # noqa: E402
# The same 2-thread Python job as steady_state.py's, so their figures compare.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from steady_state import WORKLOAD  # noqa: E402


def threads_cpu(pid):
    """{tid: (name, run ns)} of pid's threads now."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except (OSError, ValueError, IndexError):
            continue
        out[tid] = (name, ns)
    return out


def cpu_by_name(before, after):
    """Run ns between two threads_cpu() by thread name (threads that came
    meanwhile count from 0)."""
    by = {}
    for tid, (name, ns) in after.items():
        by[name] = by.get(name, 0) + ns - before.get(tid, (name, 0))[1]
    return by


def stats_of(req, sock):
    """profd's stats as {name: value}, from its answer's records (type 1:
    a stat, holding its name (1) and its u64 value (2))."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(sock)
        s.sendall(req)
        _, payload = read_answer(s)
    out = {}
    for rtype, body in tlv(payload):
        if rtype != 1:
            continue
        name = value = None
        for t, v in tlv(body):
            if t == 1:
                name = v.decode()
            elif t == 2 and len(v) == 8:
                value = int.from_bytes(v, "little")
        if name is not None and value is not None:
            out[name] = value
    return out


def tlv(buf):
    i = 0
    while i + 8 <= len(buf):
        t = int.from_bytes(buf[i:i + 4], "little")
        n = int.from_bytes(buf[i + 4:i + 8], "little")
        yield t, buf[i + 8:i + 8 + n]
        i += 8 + n


def memory(pid):
    """VmRSS and its parts in KiB: the BPF maps profd maps, the heap and
    other anonymous memory, and files (its binary, libraries)."""
    parts = {"bpf maps": 0, "anonymous": 0, "files": 0}
    name = ""
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
                name = fields[5] if len(fields) > 5 else ""
            elif fields[0] == "Rss:":
                kib = int(fields[1])
                if name.startswith("anon_inode:bpf"):
                    parts["bpf maps"] += kib
                elif name.startswith("/"):
                    parts["files"] += kib
                else:
                    parts["anonymous"] += kib
    parts["rss"] = sum(parts.values())
    with open(f"/proc/{pid}/status") as f:
        parts["threads"] = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))
    return parts


class Profd:
    def __init__(self, build, req, args):
        self.tmp = tempfile.mkdtemp(prefix="own_cost.")
        self.sock = f"{self.tmp}/sock"
        self.req = req
        self.p = subprocess.Popen([f"{build}/profd", "--config", "/dev/null", "--all-processes",
                                   "--no-history", "--socket", self.sock, "--state-dir",
                                   self.tmp] + args,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(300):
            try:
                self.stats()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{build}/profd did not answer")

    def stats(self):
        return stats_of(self.req, self.sock)

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        subprocess.run(["rm", "-rf", self.tmp])


def where(by, s0, s1, secs):
    """us of CPU per second: each thread's, and the ingest thread's by
    what it did (its ingest_cpu_ns_* counters, where the build has them)."""
    out = {f"thread {k}": v / 1e3 / secs for k, v in by.items()}
    for k in s1:
        if k.startswith("ingest_cpu_ns_"):
            out[f"  ingest: {k[len('ingest_cpu_ns_'):]}"] = (s1[k] - s0.get(k, 0)) / 1e3 / secs
    return out


def idle_run(build, req, a):
    d = Profd(build, req, [])
    try:
        time.sleep(a.settle)
        s0, c0 = d.stats(), threads_cpu(d.p.pid)
        time.sleep(a.idle_seconds)
        c1 = threads_cpu(d.p.pid)
        by = cpu_by_name(c0, c1)
        mem = memory(d.p.pid)
        s1 = d.stats()
        return {"ms": sum(by.values()) / 1e6, "where": where(by, s0, s1, a.idle_seconds),
                "mem": mem}
    finally:
        d.stop()


def rate_run(build, req, rate, a):
    d = Profd(build, req, ["--rate", str(rate)])
    try:
        time.sleep(a.settle)
        s0, c0 = d.stats(), threads_cpu(d.p.pid)
        time.sleep(a.seconds)
        c1, s1 = threads_cpu(d.p.pid), d.stats()
        n = max(s1["samples_received"] - s0["samples_received"], 1)
        by = cpu_by_name(c0, c1)
        return {"us": sum(by.values()) / 1e3 / n, "samples": n,
                "where": where(by, s0, s1, a.seconds)}
    finally:
        d.stop()


def alternate(builds, rounds, run):
    """{build: [result per round]}, the builds' order turning each round."""
    res = {b: [] for b in builds}
    for r in range(rounds):
        k = r % len(builds)
        for b in builds[k:] + builds[:k]:
            res[b].append(run(b))
    return res


def fmt(vals, unit, digits):
    med = statistics.median(vals)
    each = ", ".join(f"{v:.{digits}f}" for v in vals)
    return f"{med:.{digits}f} {unit} ({each})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--baseline", action="append", default=[],
                    help="another build directory (profd, profctl), measured alongside")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--idle-seconds", type=float, default=20)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--settle", type=float, default=10)
    ap.add_argument("--rates", default="99,999")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/own_cost.py: needs root")
    builds = [os.path.abspath(a.build)] + [os.path.abspath(b) for b in a.baseline]
    reqs = {b: request_bytes(f"{b}/profctl", ["stats"]) for b in builds}
    idle = alternate(builds, a.rounds, lambda b: idle_run(b, reqs[b], a))
    rates = [int(r) for r in a.rates.split(",") if r]
    job = subprocess.Popen([sys.executable, "-c", WORKLOAD])
    try:
        busy = {r: alternate(builds, a.rounds, lambda b: rate_run(b, reqs[b], r, a))
                for r in rates}
    finally:
        job.kill()
        job.wait()
    report(builds, idle, busy, a)


def report(builds, idle, busy, a):
    names = [os.path.relpath(b, ROOT) if b.startswith(ROOT) else b for b in builds]
    print(f"{a.rounds} rounds, builds alternated; each cell: median (each round)\n")
    print("| | " + " | ".join(names) + " |")
    print("|---" * (len(builds) + 1) + "|")
    print(f"| idle: CPU over {a.idle_seconds:g} s | " +
          " | ".join(fmt([r["ms"] for r in idle[b]], "ms", 1) for b in builds) + " |")
    for rate, res in busy.items():
        print(f"| {rate} Hz, 2-thread Python: CPU per sample | " +
              " | ".join(fmt([r["us"] for r in res[b]], "us", 2) for b in builds) + " |")
    print("| RSS, idle | " + " | ".join(
        fmt([r["mem"]["rss"] / 1024 for r in idle[b]], "MiB", 1) for b in builds) + " |")
    for part in ("bpf maps", "anonymous", "files"):
        print(f"| &nbsp; of which {part} | " + " | ".join(
            fmt([r["mem"][part] / 1024 for r in idle[b]], "MiB", 1) for b in builds) + " |")
    print("| threads | " + " | ".join(
        str(idle[b][-1]["mem"]["threads"]) for b in builds) + " |")
    this = builds[0]
    runs = [idle[this]] + [res[this] for res in busy.values()]
    keys = sorted({k for rs in runs for r in rs for k in r["where"]})
    if len(keys) > 2:  # threads named, or the ingest counters there
        print(f"\n{names[0]}: where the CPU goes, us per second (median over rounds; "
              "ingest's rows are part of thread profd):\n")
        heads = ["idle"] + [f"{r} Hz" for r in busy]
        print("| | " + " | ".join(heads) + " |")
        print("|---" * (len(heads) + 1) + "|")
        for k in keys:
            cells = [statistics.median(r["where"].get(k, 0) for r in rs) for rs in runs]
            print(f"| {k.replace(' ', '&nbsp;', 2) if k.startswith('  ') else k} | " +
                  " | ".join(f"{c:.0f}" if c >= 10 else f"{c:.1f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
