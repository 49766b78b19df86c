"""A client that asks profd for a dump and never reads the answer (with
a 4 KiB receive buffer, so profd's send blocks soon).  The request is
profctl's own (profd_wire).  Holds the connection for --seconds."""
import argparse
import socket
import time

from profd_wire import request_bytes

ap = argparse.ArgumentParser()
ap.add_argument("--profctl", required=True)
ap.add_argument("--socket", required=True)
ap.add_argument("--seconds", type=float, required=True)
ap.add_argument("args", nargs="*", default=["dump", "--all", "--format", "folded"])
a = ap.parse_args()

req = request_bytes(a.profctl, a.args)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(a.socket)
s.sendall(req)
print(f"stuck client: sent a {len(req)}-byte request, reading nothing", flush=True)
time.sleep(a.seconds)
