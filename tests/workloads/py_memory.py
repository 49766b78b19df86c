# Known amounts of resident memory from known functions, for
# `profctl dump --type memory`: big_buffer() writes a large bytearray page
# by page (bytearray() zeroes it first: the same function), small_objects()
# keeps many small objects.  Each measures the
# RSS it added (the truth the profile is checked against) and writes it
# to the file given with --truth; then the program waits to be profiled.
import sys, time

PAGE = 4096

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE

def big_buffer(mib):
    b = bytearray(mib << 20)  # zeroed as it is made: resident here already
    for i in range(0, len(b), PAGE):
        b[i] = 1  # (and were it calloc'ed, here, page by page)
    return b

def small_objects(n):
    return [str(i) * 3 for i in range(n)]

def main():
    truth = sys.argv[sys.argv.index("--truth") + 1]
    big_mib = int(sys.argv[sys.argv.index("--big-mib") + 1])
    small_n = int(sys.argv[sys.argv.index("--small") + 1])
    time.sleep(1.0)  # profd has found the interpreter
    r0 = rss()
    keep_big = big_buffer(big_mib)
    r1 = rss()
    keep_small = small_objects(small_n)
    r2 = rss()
    with open(truth, "w") as f:
        f.write("big_buffer %d\nsmall_objects %d\n" % (r1 - r0, r2 - r1))
    time.sleep(60)
    return keep_big, keep_small

main()
