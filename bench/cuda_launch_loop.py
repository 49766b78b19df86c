"""The launch-heavy loop of bench/cuda_launch_tax.py: a training step's
shape, some Python work then one kernel launch, through ctypes into a
runtime stand-in that returns at once.

usage: cuda_launch_loop.py LIBCUDART SECONDS WORK_ITERS
       cuda_launch_loop.py --calibrate WORK_US
Runs ~1 s to warm up (profd attaches to the library when it is mapped),
then launches for SECONDS and prints one JSON line: launches, cpu_s (user
+ system of this process), wall_s.  WORK_ITERS: iterations of the Python
work between launches (0: back to back), as --calibrate prints for
WORK_US, once for all runs to compare (a calibration per run would differ
by more than what is measured)."""
import ctypes
import json
import os
import sys
import time


class dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def work(n):
    x = 0
    for i in range(n):
        x += i
    return x


def calibrate(work_us):
    """Iterations of work() that take work_us here."""
    if work_us <= 0:
        return 0
    n = 1000
    while True:
        t = time.perf_counter()
        work(n)
        dt = time.perf_counter() - t
        if dt > 0.05:
            return max(1, int(n * work_us * 1e-6 / dt))
        n *= 2


def loop(rt, stub, g, b, n, seconds):
    launches = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(100):
            work(n)
            rt.cudaLaunchKernel(stub, g, b, None, 0, None)
        launches += 100
    return launches


def main():
    if sys.argv[1] == "--calibrate":
        print(calibrate(float(sys.argv[2])))
        return
    lib, seconds, n = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    rt = ctypes.CDLL(lib)
    rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, dim3, dim3, ctypes.c_void_p,
                                    ctypes.c_size_t, ctypes.c_void_p]
    stub = ctypes.cast(rt.cudaDeviceSynchronize, ctypes.c_void_p)  # any code address
    g, b = dim3(4, 1, 1), dim3(256, 1, 1)
    loop(rt, stub, g, b, n, 1.0)
    t0, c0 = time.perf_counter(), os.times()
    launches = loop(rt, stub, g, b, n, seconds)
    t1, c1 = time.perf_counter(), os.times()
    print(json.dumps({"launches": launches, "wall_s": t1 - t0,
                      "cpu_s": (c1.user - c0.user) + (c1.system - c0.system)}))


if __name__ == "__main__":
    main()
