#!/usr/bin/env python3
"""bench/heap_growth.py: whether profd's heap keeps growing under churn,
and where, from heaptrack's allocation records.

profd runs under heaptrack with --all-processes and a 2000-entry process
table while PYTHONS busy Python workers run and tests/workloads/exec_storm
spawns /bin/true at STORM a second; after SHORT seconds and, in a second
run, after LONG seconds profd is killed with SIGKILL, so that heaptrack
records as "leaked" everything still allocated at that moment.  The
difference between the two runs, per allocation site, is what the heap
gained between SHORT and LONG: a bounded cache shows its cap, a leak
grows with time.  Prints both totals and the sites that grew most.

RSS is the wrong figure for this: most of profd's is the BPF maps it
mmaps (ring buffers, unwind tables), whose pages count once first
touched (tests/e2e/test_load.sh judges RssAnon for that reason).

Needs root, heaptrack (Debian's heaptrack package) and a build with
tests/workloads/exec_storm.  Takes LONG + SHORT + about 30 seconds.

usage: bench/heap_growth.py [--build DIR] [--short S] [--long S]
                            [--pythons N] [--storm RATE] [--rounds N]
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = """
import time
end = time.monotonic() + %f
def work(n):
    return sum(i * i for i in range(n))
while time.monotonic() < end:
    work(2000)
time.sleep(3600)
"""
SITE = re.compile(r"^([0-9.]+)([KMG]?)B? leaked over (\d+) calls from$")
UNIT = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}


def wait_socket(profctl, sock, proc):
    for _ in range(300):
        if proc.poll() is not None:
            sys.exit("heap_growth: profd exited during start-up")
        if subprocess.run([profctl, "--socket", sock, "stats"], capture_output=True).returncode == 0:
            return
        time.sleep(0.1)
    sys.exit("heap_growth: profd did not answer within 30 s")


def kill_exe(path):
    """SIGKILL every process running PATH: heaptrack keeps what is
    allocated at that moment as "leaked"."""
    real = os.path.realpath(path)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink("/proc/%s/exe" % pid) == real:
                os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


def one_run(build, seconds, pythons, storm, out):
    """profd under heaptrack through SECONDS of load; the record in OUT."""
    tmp = tempfile.mkdtemp(prefix="heap_growth.")
    sock = os.path.join(tmp, "profd.sock")
    profd = subprocess.Popen(
        ["heaptrack", "-o", out, os.path.join(build, "profd"), "--config", "/dev/null",
         "--state-dir", os.path.join(tmp, "state"), "--socket", sock, "--all-processes",
         "--max-procs", "2000", "--rate", "199"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    workers = []
    try:
        wait_socket(os.path.join(build, "profctl"), sock, profd)
        workers = [subprocess.Popen(["nice", "-n", "10", sys.executable, "-c", WORKER % seconds])
                   for _ in range(pythons)]
        subprocess.run([os.path.join(build, "tests/workloads/exec_storm"), str(seconds), "4",
                        str(storm)], check=True, stdout=subprocess.DEVNULL)
    finally:
        # profd alone, not heaptrack's own processes: they write the record.
        kill_exe(os.path.join(build, "profd"))
        profd.wait()
        for w in workers:
            w.kill()
            w.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    time.sleep(2)  # heaptrack's writer finishes the file


def sites(record):
    """Bytes still allocated per allocation site (function and line)."""
    text = subprocess.run(
        ["heaptrack_print", "-f", record, "--print-peaks", "0", "--print-allocators", "0",
         "--print-temporary", "0", "--print-leaks", "1", "--peak-limit", "500",
         "--sub-peak-limit", "0"], capture_output=True, text=True, check=True).stdout.split("\n")
    out = {}
    for i, line in enumerate(text):
        m = SITE.match(line)
        if not m or i + 1 >= len(text):
            continue
        where = text[i + 1].strip()
        if i + 2 < len(text) and text[i + 2].startswith("  at "):
            where += " " + text[i + 2].strip()[3:]
        out[where] = out.get(where, 0) + float(m.group(1)) * UNIT[m.group(2)]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--short", type=float, default=30)
    ap.add_argument("--long", type=float, default=90)
    ap.add_argument("--pythons", type=int, default=50)
    ap.add_argument("--storm", type=int, default=800, help="spawns a second")
    ap.add_argument("--rounds", type=int, default=1, help="pairs of runs, for the spread")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("heap_growth: needs root (profd loads BPF programs)")
    for tool in ("heaptrack", "heaptrack_print"):
        if not shutil.which(tool):
            sys.exit("heap_growth: %s is missing (apt install heaptrack)" % tool)
    build = os.path.abspath(a.build)
    work = tempfile.mkdtemp(prefix="heap_growth.records.")
    growth = []
    for r in range(a.rounds):
        got = {}
        for seconds in (a.short, a.long):
            rec = os.path.join(work, "r%d.%ds" % (r, seconds))
            one_run(build, seconds, a.pythons, a.storm, rec)
            got[seconds] = sites(rec + ".zst")
        short, long_ = got[a.short], got[a.long]
        total_s, total_l = sum(short.values()) / 1e6, sum(long_.values()) / 1e6
        growth.append(total_l - total_s)
        print("round %d: heap %.1f MB after %gs, %.1f MB after %gs: %+.1f MB" %
              (r + 1, total_s, a.short, total_l, a.long, total_l - total_s))
        diff = sorted(((long_.get(k, 0) - short.get(k, 0), k) for k in set(short) | set(long_)),
                      reverse=True)
        for d, k in diff[:8]:
            print("  %+8.0f KB  %8.0f KB  %s" % (d / 1e3, long_.get(k, 0) / 1e3, k))
    if a.rounds > 1:
        print("growth over %gs: %s MB" % (a.long - a.short, ", ".join("%+.1f" % g for g in growth)))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
