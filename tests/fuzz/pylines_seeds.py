# Writes fuzz_pylines seeds into the directory given: for each format, one
# byte (1 = 3.9 lnotab, 2 = 3.10 PEP 626, 3 = 3.11+ locations), the
# first line as a little-endian int32, then a table.  The running
# interpreter's own table is used for its format.
import struct
import sys


def sample(a, b):
    for i in range(b):
        a += i * 2
        if a > 100:
            return a
    return -a


def seed(out, name, fmt, first, table):
    with open(f"{out}/{name}", "wb") as f:
        f.write(bytes([fmt]) + struct.pack("<i", first) + table)


out = sys.argv[1]
code = sample.__code__
seed(out, "lnotab", 1, 10, bytes([0, 1, 6, 1, 8, 2, 255, 0, 4, 0xFF]))
seed(out, "pep626", 2, 10, bytes([6, 1, 8, 1, 0, 0x80, 10, 2, 4, 0xFE]))
if sys.version_info >= (3, 11):
    seed(out, "locations", 3, code.co_firstlineno, code.co_linetable)
elif sys.version_info >= (3, 10):
    seed(out, "pep626-real", 2, code.co_firstlineno, code.co_linetable)
else:
    seed(out, "lnotab-real", 1, code.co_firstlineno, code.co_lnotab)
