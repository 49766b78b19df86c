"""Calls the stand-in libnccl.so.2 (argv[1]) through ctypes from known
lines, as a rank of a job launched by hand (RANK set by the caller):
ncclAllReduce `n` times (20 ms each), ncclBroadcast `n` times (5 ms)."""
import ctypes
import sys
import time

nccl = ctypes.CDLL(sys.argv[1])
time.sleep(1)  # profd probes the library once it sees it mapped: a moment
n = int(sys.argv[2])
comm = ctypes.c_void_p()
nccl.ncclCommInitRank(ctypes.byref(comm), 1, None, 0)


def step():
    nccl.ncclAllReduce(None, None, 1, 0, 0, comm, None)  # allreduce line
    nccl.ncclBroadcast(None, None, 1, 0, 0, comm, None)  # broadcast line


for _ in range(n):
    step()
