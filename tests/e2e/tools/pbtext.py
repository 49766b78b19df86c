"""protoc's text format (`protoc --decode`), read into nested lists of
(name, value) pairs: a message is a list, a string is bytes as sent (it may
be a gzipped profile), a number an int.  For the push tests' checks of
what profd sent."""
import subprocess


def decode(include, proto, message, data):
    """The text of DATA decoded as MESSAGE of INCLUDE/PROTO by protoc."""
    return subprocess.run(["protoc", "-I", include, "--decode", message, include + "/" + proto],
                          input=data, capture_output=True, check=True).stdout.decode("latin-1")


def parse(lines):
    """protoc's text, one field per line, into (name, value) pairs."""
    stack = [[]]
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if line.endswith("{"):
            node = []
            stack[-1].append((line[:-1].strip(), node))
            stack.append(node)
        elif line == "}":
            stack.pop()
        else:
            k, v = line.split(":", 1)
            v = v.strip()
            if v.startswith('"'):
                # protoc escapes every byte outside printable ASCII.
                v = v[1:-1].encode("latin-1").decode("unicode_escape").encode("latin-1")
            else:
                v = int(v)
            stack[-1].append((k, v))
    return stack[0]


def all_of(node, name):
    return [v for k, v in node if k == name]


def one(node, name, default=None):
    """The field NAME of NODE, which must not repeat."""
    v = all_of(node, name)
    if len(v) > 1:
        raise ValueError("%s: %d of them" % (name, len(v)))
    return v[0] if v else default


def text(v):
    """A string field as text (UTF-8); anything else as it is."""
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v
