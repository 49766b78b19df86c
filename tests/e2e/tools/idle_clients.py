"""Hostile control-socket clients: hold N connections that never send a
byte, reconnecting whenever profd closes one, for --seconds.  Prints how
many connections it opened and how many profd closed or refused."""
import argparse
import select
import socket
import time

ap = argparse.ArgumentParser()
ap.add_argument("--socket", required=True)
ap.add_argument("--clients", type=int, default=50)
ap.add_argument("--seconds", type=float, required=True)
a = ap.parse_args()

opened = closed = refused = 0
conns = []


def connect():
    global opened, refused
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(a.socket)
    except OSError:
        refused += 1
        s.close()
        return None
    opened += 1
    return s


end = time.monotonic() + a.seconds
while time.monotonic() < end:
    conns = [c for c in conns if c is not None]
    while len(conns) < a.clients and time.monotonic() < end:
        c = connect()
        if c is None:
            time.sleep(0.05)
            break
        conns.append(c)
    readable, _, _ = select.select(conns, [], [], 0.1)
    for c in readable:  # closed (or refused with a message) by profd
        try:
            c.recv(4096)
        except OSError:
            pass
        closed += 1
        c.close()
        conns.remove(c)
print(f"idle clients: opened {opened}, closed by profd {closed}, refused {refused}")
