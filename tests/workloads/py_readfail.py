# A Python stack whose caller link points at unmapped memory while the
# leaf runs: for the profiler, a frame it cannot read (as when the
# interpreter frees or rewrites frames under it).  middle() overwrites
# its own _PyInterpreterFrame.previous through ctypes, spins in leaf(),
# and restores it before returning, so the interpreter never follows it.
# usage: py_readfail.py SECONDS   (exit 3: no known layout for this Python)
import ctypes
import sys
import time

# offsetof(_PyInterpreterFrame, previous); PyFrameObject.f_frame is at 24
# (after PyObject_HEAD and f_back) on both.
PREVIOUS = {(3, 11): 48, (3, 12): 8}
F_FRAME = 24
UNMAPPED = 0xdead0000


def leaf(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


def middle(seconds):
    frame = sys._getframe()
    iframe = ctypes.c_void_p.from_address(id(frame) + F_FRAME).value
    link = ctypes.c_void_p.from_address(iframe + PREVIOUS[sys.version_info[:2]])
    saved = link.value
    link.value = UNMAPPED
    try:
        return leaf(seconds)
    finally:
        link.value = saved


def main():
    if sys.version_info[:2] not in PREVIOUS:
        print("no layout for", sys.version.split()[0])
        sys.exit(3)
    print("ready", flush=True)
    middle(float(sys.argv[1]))
    print("done", flush=True)


main()
