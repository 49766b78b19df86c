"""An MPI job (mpi4py): every rank computes, then Allreduce; rank 2
computes twice as long, so the others wait for it in MPI_Allreduce.
argv: steps, seconds of compute a step[, SWITCH: from that step on rank
1 is the slow one instead; rank 0 prints "switch T" (time.time())]."""
import sys
import time

import numpy as np
from mpi4py import MPI


def compute(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:  # the straggler's extra line
        x += 1
    return x


def main():
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    steps, seconds = int(sys.argv[1]), float(sys.argv[2])
    switch = int(sys.argv[3]) if len(sys.argv) > 3 else steps
    buf, out = np.ones(1024), np.empty(1024)
    for step in range(steps):
        if step == switch and rank == 0:
            print("switch %.3f" % time.time(), flush=True)
        slow = 2 if step < switch else 1
        compute(2 * seconds if rank == slow else seconds)
        comm.Allreduce(buf, out, op=MPI.SUM)  # the wait


main()
