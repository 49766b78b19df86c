# A Python stack as deep as asked: <module> -> main -> descend x (DEPTH + 1),
# the innermost one spinning.  Arguments: seconds, depth.
import sys
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def descend(depth, end):
    if depth > 0:
        return descend(depth - 1, end)  # the recursive call
    while time.monotonic() < end:
        spin(2000)  # innermost: the leaf work


def main(seconds, depth):
    descend(depth, time.monotonic() + seconds)


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    main(float(sys.argv[1]), int(sys.argv[2]))  # called from <module>
