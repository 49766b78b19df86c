# Two multiprocessing children started by METHOD (fork, forkserver or
# spawn): one naps for SECONDS after 0.35 s of start-up (never on a CPU: a wall
# profile's only sample of its nap comes when it wakes, as it is about to
# exit), one burns a CPU as long.  Writes "napper PID" and "burner PID" to OUT.
import multiprocessing as mp
import os
import sys
import time


def nap(seconds):
    # Starts up first: a process that blocks for good within ~100 ms of
    # its exec may block before profd has its unwind tables and has found
    # its interpreter (frames then unknown; docs/guide/multiprocess.md, short-lived processes).
    time.sleep(0.3)
    burn(0.05)
    time.sleep(seconds)  # the napper sleeps here


def burn(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:  # the burner runs here
        for i in range(1000):
            x += i
    return x


def main(method, seconds, out):
    ctx = mp.get_context(method)
    kids = {"napper": ctx.Process(target=nap, args=(seconds,)),
            "burner": ctx.Process(target=burn, args=(seconds,))}
    for k in kids.values():
        k.start()
    with open(out, "w") as f:
        for name, k in kids.items():
            f.write("%s %d\n" % (name, k.pid))
    for k in kids.values():
        k.join()


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), sys.argv[3])
