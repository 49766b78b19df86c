# A C function between Python frames: sort_them -> sorted() (C) -> slow_key.
import sys
import time


def slow_key(x):
    s = 0
    for i in range(200):
        s += i ^ x
    return s


def sort_them():
    return sorted(range(2000), key=slow_key)


def main(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sort_them()


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 5.0)
