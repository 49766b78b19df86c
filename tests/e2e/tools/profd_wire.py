"""profd's control protocol as profctl speaks it, for test clients that
must misbehave or time themselves without starting a process per request.
request_bytes() records what profctl sends for a command by pointing it at
a socket of ours; read_answer() reads one whole answer."""
import os
import socket
import subprocess
import tempfile

HDR = 16


def request_bytes(profctl, args):
    d = tempfile.mkdtemp()
    path = os.path.join(d, "rec.sock")
    lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lst.bind(path)
    lst.listen(1)
    p = subprocess.Popen([profctl, "--socket", path] + list(args),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conn, _ = lst.accept()
    conn.settimeout(5)
    req = b""
    while len(req) < HDR or len(req) < HDR + int.from_bytes(req[8:12], "little"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        req += chunk
    conn.close()
    p.wait()
    lst.close()
    os.unlink(path)
    os.rmdir(d)
    return req


def read_answer(s):
    """The answer's type and payload; raises on a short read."""
    buf = b""
    while len(buf) < HDR or len(buf) < HDR + int.from_bytes(buf[8:12], "little"):
        chunk = s.recv(1 << 20)
        if not chunk:
            raise ConnectionError("profd closed the connection early")
        buf += chunk
    return int.from_bytes(buf[6:8], "little"), buf[HDR:]
