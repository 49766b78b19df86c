"""A torchrun job on PyTorch's gloo backend: each rank computes, then
all_reduce; rank 1 first waits for a DataLoader-like worker process of
its own (forked, so it inherits the rank's variables), so the others
wait for rank 1.  argv: steps."""
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def spin(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:  # the spin
        x += 1


def loader(q, steps):
    for i in range(steps):
        spin(0.05)  # the worker's batch
        q.put(i)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    steps = int(sys.argv[1])
    t = torch.ones(256)
    q = None
    if rank == 1:
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        ctx.Process(target=loader, args=(q, steps), daemon=True).start()
    for _ in range(steps):
        if q is not None:
            q.get()
            spin(0.1)  # the slow rank's extra work
        spin(0.05)
        dist.all_reduce(t)  # the wait
    dist.destroy_process_group()


main()
