"""Ask profd for its stats over and over and print each answer's latency
(connect to the last byte of the answer) in ms and 0, or the error and 1,
one per line.  The request bytes are profctl's own (profd_wire); no
process is started per request, so the figure is profd's."""
import argparse
import socket
import time

from profd_wire import read_answer, request_bytes

ap = argparse.ArgumentParser()
ap.add_argument("--profctl", required=True)
ap.add_argument("--socket", required=True)
ap.add_argument("--seconds", type=float, required=True)
ap.add_argument("--every", type=float, default=0.2)
ap.add_argument("--out", required=True)
a = ap.parse_args()

req = request_bytes(a.profctl, ["stats"])
end = time.monotonic() + a.seconds
with open(a.out, "w") as out:
    while time.monotonic() < end:
        t0 = time.monotonic()
        rc = 0
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(5)
                s.connect(a.socket)
                s.sendall(req)
                read_answer(s)
        except OSError:
            rc = 1
        ms = (time.monotonic() - t0) * 1000
        out.write(f"{ms:.1f} {rc}\n")
        out.flush()
        time.sleep(max(0.0, a.every - ms / 1000))
