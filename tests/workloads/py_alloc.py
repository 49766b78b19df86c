# An allocation-heavy Python program for bench/run's memory section: each
# round makes a 32 MiB buffer (glibc maps it fresh, so every page faults
# in) and 200,000 small objects, then drops both.  Prints its wall time in
# seconds (the first token), the MiB it made resident per second, and its
# CPU time (user + system, steadier than wall time on a shared machine).
# --tracemalloc traces it the way tracemalloc users do.
import sys, time

def big():
    return bytearray(32 << 20)

def small():
    return [(i, str(i)) for i in range(200000)]

def main(rounds):
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        b = big()
        s = small()
        del b, s
    t, c = time.perf_counter() - t0, time.process_time() - c0
    print("%.4f %.0f %.4f" % (t, rounds * 32 / t, c))

if "--tracemalloc" in sys.argv:
    import tracemalloc
    tracemalloc.start()
main(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 40)
