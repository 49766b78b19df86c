"""How many times a process's BPF programs ran while a command ran.

usage: bpf_runs.py PID PREFIX COMMAND [ARG...]
Turns BPF run statistics on for the duration (BPF_ENABLE_STATS: the
kernel counts while any such descriptor is open, so this never turns
them off under another user of kernel.bpf_stats_enabled), runs COMMAND,
and prints the number of runs, during COMMAND, of the programs that
process PID holds whose names start with PREFIX.  A count is exact,
whatever the machine's load: a test can tell "this program ran for
every system call" from "it never ran" without timing anything.
"""
import ctypes
import json
import os
import subprocess
import sys

# bpf(2)'s number on each architecture profd runs on.
SYS_BPF = {"x86_64": 321, "aarch64": 280}[os.uname().machine]
BPF_ENABLE_STATS = 32
BPF_STATS_RUN_TIME = 0


def enable_stats():
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(16)  # enable_stats.type = 0, rest zero
    fd = libc.syscall(SYS_BPF, BPF_ENABLE_STATS, attr, ctypes.c_uint(16))
    if fd < 0:
        sys.exit(f"bpf_runs: BPF_ENABLE_STATS: {os.strerror(ctypes.get_errno())}")
    return fd


def prog_ids(pid):
    ids = set()
    base = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(base):
        try:
            with open(os.path.join(base, fd)) as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def runs(pid, prefix):
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                         check=True).stdout
    mine = prog_ids(pid)
    return sum(p.get("run_cnt", 0) for p in json.loads(out)
               if p["id"] in mine and p.get("name", "").startswith(prefix))


def main():
    pid, prefix, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
    fd = enable_stats()
    before = runs(pid, prefix)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    after = runs(pid, prefix)
    os.close(fd)
    print(after - before)


if __name__ == "__main__":
    main()
