# Fixed, call-heavy pure-Python work for overhead benchmarks: many small
# calls, recursion and method calls.  Prints the elapsed seconds.
# usage: py_calls.py [SCALE] [THREADS]
import sys
import threading
import time


class Point:
    def __init__(self, x):
        self.x = x

    def step(self):
        return self.x + 1


def add(a, b):
    return a + b


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def work(scale):
    total = 0
    for i in range(scale * 20000):
        total = add(total, Point(i).step())
    for _ in range(scale):
        total += fib(18)
    return total


def main():
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    nthreads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    start = time.perf_counter()
    if nthreads == 1:
        work(scale)
    else:
        threads = [threading.Thread(target=work, args=(scale // nthreads,)) for _ in range(nthreads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    print("%.6f" % (time.perf_counter() - start))


if __name__ == "__main__":
    main()
