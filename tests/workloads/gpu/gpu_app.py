"""A CUDA program without a GPU, in Python through ctypes, for
tests/e2e/test_gpu_cuda.sh: known numbers of runtime and driver API calls
from known lines.  usage: gpu_app.py LIBDIR DIR (loads the stub libraries
from LIBDIR, writes DIR/loaded, waits for DIR/go, runs, writes DIR/done: the nanoseconds sync_all took, timed here)"""
import ctypes
import os
import sys
import time


class dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def launch_all(rt, stub, n):
    for _ in range(n):
        rt.cudaLaunchKernel(stub, dim3(4, 1, 1), dim3(256, 1, 1), None, 0, None)  # L:launch


def sync_all(rt, n):
    for _ in range(n):
        rt.cudaDeviceSynchronize()  # L:sync


def stream_syncs(drv, n):
    for _ in range(n):
        drv.cuStreamSynchronize(None)  # L:stream


def main(libdir, d):
    drv = ctypes.CDLL(os.path.join(libdir, "libcuda.so.1"))
    rt = ctypes.CDLL(os.path.join(libdir, "libcudart.so.12"))
    kernels = ctypes.CDLL(os.path.join(libdir, "libkernels.so"))
    rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, dim3, dim3, ctypes.c_void_p,
                                    ctypes.c_size_t, ctypes.c_void_p]
    stub = ctypes.cast(getattr(kernels, "_Z9vectorAddPKfS0_Pfi"), ctypes.c_void_p)
    open(os.path.join(d, "loaded"), "w").close()
    while not os.path.exists(os.path.join(d, "go")):
        time.sleep(0.02)
    launch_all(rt, stub, 30)
    t = time.monotonic_ns()
    sync_all(rt, 25)
    sync_ns = time.monotonic_ns() - t
    stream_syncs(drv, 12)
    with open(os.path.join(d, "done.tmp"), "w") as f:
        f.write("%d\n" % sync_ns)
    os.rename(os.path.join(d, "done.tmp"), os.path.join(d, "done"))
    time.sleep(60)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])  # L:module
