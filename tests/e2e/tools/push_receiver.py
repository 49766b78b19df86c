"""The loopback end of the push tests: an HTTP server on 127.0.0.1 (an
ephemeral port, written to OUT/port once it listens) that saves request N
as OUT/NNN.body (the body as sent) and OUT/NNN.req, five lines:

    path (with the query)
    Content-Type
    Content-Encoding
    Connect-Protocol-Version
    the status answered (503 or 200)

The first --fails requests are answered 503, as an overloaded server
would, with --fail-body as JSON when given (Connect's error); the others
200 with an empty body (Connect's empty PushResponse, typed --ok-type)."""
import argparse
import http.server
import os

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--fails", type=int, default=0)
ap.add_argument("--fail-body", default="")
ap.add_argument("--ok-type", default="")
a = ap.parse_args()
n = 0


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        global n
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        n += 1
        code = 503 if n <= a.fails else 200
        with open(os.path.join(a.out, "%03d.body" % n), "wb") as f:
            f.write(body)
        # The .req last: a test that sees it finds the body complete.
        fields = [self.path] + [self.headers.get(h, "") for h in
                                ("Content-Type", "Content-Encoding", "Connect-Protocol-Version")]
        with open(os.path.join(a.out, "%03d.req" % n), "w") as f:
            f.write("\n".join(fields + [str(code)]) + "\n")
        if code != 200:
            reply, ctype = a.fail_body.encode(), "application/json" if a.fail_body else ""
        else:
            reply, ctype = b"", a.ok_type
        self.send_response(code)
        if ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(os.path.join(a.out, "port.tmp"), "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(os.path.join(a.out, "port.tmp"), os.path.join(a.out, "port"))
srv.serve_forever()
