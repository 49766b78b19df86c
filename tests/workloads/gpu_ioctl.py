"""GPU driver stand-in for tests/e2e/test_gpu_ioctl.sh: known numbers of
ioctls with NVIDIA, UVM and AMDKFD command numbers, and polls with known
timeouts, on pseudo-terminal slaves that profd watches as GPU devices
(--gpu-device PATH=CLASS).  A tty answers an unknown ioctl with ENOTTY at
once, but the system call is real; a slave nobody writes to never becomes
readable, so a poll waits exactly its timeout.

usage: gpu_ioctl.py DIR
Writes DIR/ptys (nvidia, uvm, kfd, generic, unwatched slave paths, one a
line), waits for DIR/go, runs, then writes DIR/done.
"""
import fcntl
import os
import select
import struct
import sys
import time


def ioc(direction, kind, nr, size):
    return (direction << 30) | (size << 16) | (kind << 8) | nr


RW = 3
F, K, T = ord("F"), ord("K"), ord("T")


def call(fd, cmd, arg=0):
    try:
        fcntl.ioctl(fd, cmd, arg)
    except OSError:
        pass  # ENOTTY: the call was made, that is what counts


def nv_alloc(fd):
    call(fd, ioc(RW, F, 0x2B, 48))  # L:nv_alloc


def nv_alloc_other_size(fd):
    call(fd, ioc(RW, F, 0x2B, 40))  # L:nv_alloc_other_size (same nr, other size)


def nv_control_xfer(fd):
    inner = bytearray(struct.pack("<IIQ", 0x2A, 32, 0))  # nv_ioctl_xfer: NV_ESC_RM_CONTROL
    call(fd, ioc(RW, F, 211, 16), inner)  # L:nv_control_xfer


def nv_wrong_type(fd):
    call(fd, ioc(RW, T, 0x2B, 48))  # not an NVIDIA command: not traced


def uvm_map(fd):
    call(fd, 33)  # L:uvm_map (UVM_MAP_EXTERNAL_ALLOCATION)


def kfd_wait(fd):
    call(fd, ioc(RW, K, 0x0C, 24))  # L:kfd_wait (AMDKFD_IOC_WAIT_EVENTS)


def generic(fd):
    call(fd, ioc(RW, F, 0x2B, 48))  # L:generic


def unwatched(fd):
    call(fd, ioc(RW, F, 0x2B, 48))  # L:unwatched


def poll_wait(fd, ms):
    p = select.poll()
    p.register(fd, select.POLLIN)
    p.poll(ms)  # L:poll_wait


def main(d):
    ptys = [os.openpty() for _ in range(5)]
    with open(os.path.join(d, "ptys.tmp"), "w") as f:
        for _, slave in ptys:
            f.write(os.ttyname(slave) + "\n")
    os.rename(os.path.join(d, "ptys.tmp"), os.path.join(d, "ptys"))
    while not os.path.exists(os.path.join(d, "go")):
        time.sleep(0.02)
    nv, uvm, kfd, gen, other = (slave for _, slave in ptys)
    for _ in range(7):
        nv_alloc(nv)
    for _ in range(3):
        nv_alloc_other_size(nv)
    for _ in range(5):
        nv_control_xfer(nv)
    for _ in range(4):
        nv_wrong_type(nv)
    for _ in range(6):
        uvm_map(uvm)
    for _ in range(8):
        kfd_wait(kfd)
    for _ in range(2):
        generic(gen)
    for _ in range(9):
        unwatched(other)
    for _ in range(10):
        poll_wait(nv, 50)
    open(os.path.join(d, "done"), "w").close()
    time.sleep(60)  # stay queryable as a live process until the test kills us


if __name__ == "__main__":
    main(sys.argv[1])
