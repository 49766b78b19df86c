"""The gil profile's workload: the main thread computes in Python (holding
the GIL) while another hashes 1 MiB buffers, which hashlib does with the
GIL released.  Runs until killed."""
import hashlib
import threading

BUF = b"x" * (1 << 20)


def hasher():
    while True:
        hashlib.sha256(BUF).digest()


def spin():
    x = 0
    while True:
        for i in range(1000):
            x += i


if __name__ == "__main__":
    threading.Thread(target=hasher, name="hasher", daemon=True).start()
    spin()
