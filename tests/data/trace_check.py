#!/usr/bin/env python3
"""Structural check of a Trace Event Format file written by profd
(render_trace.h), and a summary of what it holds.

usage: trace_check.py FILE

Checks: a JSON object with traceEvents; every event has ph, pid, tid; per
thread, B and E well nested (an E names the frame its thread opened last),
timestamps non-decreasing, nothing left open; a process_name for every
process and a thread_name for every thread that has events.  Prints a JSON
summary on stdout: per thread its name, pid, tid, bars begun and time (ms)
per frame name, first and last timestamp (ms).  Exit 1 with a message on
stderr when a check fails."""
import json
import sys


def die(msg):
    print("trace_check: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    doc = json.load(open(sys.argv[1]))
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        die("not an object with a traceEvents array")
    procs, names, threads = {}, {}, {}
    for ev in doc["traceEvents"]:
        for k in ("ph", "pid", "tid"):
            if k not in ev:
                die("event without %s: %s" % (k, ev))
        key = (ev["pid"], ev["tid"])
        if ev["ph"] == "M":
            if ev["name"] == "process_name":
                procs[ev["pid"]] = ev["args"]["name"]
            elif ev["name"] == "thread_name":
                names[key] = ev["args"]["name"]
            continue
        t = threads.setdefault(key, {"stack": [], "last": None, "first": None,
                                     "frames": {}, "ms": {}, "instants": 0})
        ts = ev["ts"]
        if t["last"] is not None and ts < t["last"]:
            die("tid %s: ts %s after %s" % (ev["tid"], ts, t["last"]))
        t["last"] = ts
        if t["first"] is None:
            t["first"] = ts
        if ev["ph"] == "i":
            t["instants"] += 1
        elif ev["ph"] == "B":
            if "args" in ev:
                die("a B event with args (speedscope would name the frame after them)")
            t["stack"].append((ev["name"], ts))
            t["frames"][ev["name"]] = t["frames"].get(ev["name"], 0) + 1
        elif ev["ph"] == "E":
            if not t["stack"]:
                die("tid %s: E %r with nothing open" % (ev["tid"], ev["name"]))
            name, start = t["stack"].pop()
            if name != ev["name"]:
                die("tid %s at %s: E %r ends B %r" % (ev["tid"], ts, ev["name"], name))
            t["ms"][name] = t["ms"].get(name, 0) + (ts - start) / 1000.0
        else:
            die("unexpected phase %r" % ev["ph"])
    out = []
    for (pid, tid), t in sorted(threads.items()):
        if t["stack"]:
            die("tid %s: frames left open: %s" % (tid, t["stack"]))
        if pid not in procs:
            die("no process_name for pid %s" % pid)
        if (pid, tid) not in names:
            die("no thread_name for tid %s" % tid)
        out.append({"name": names[(pid, tid)], "process": procs[pid], "pid": pid, "tid": tid,
                    "frames": t["frames"], "ms": {k: round(v, 3) for k, v in t["ms"].items()},
                    "instants": t["instants"], "first": t["first"] / 1000.0,
                    "last": t["last"] / 1000.0})
    json.dump({"threads": out}, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
