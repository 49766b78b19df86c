#!/usr/bin/env python3
"""tools_check.py SRC: every external command the test suite calls is
provided on a fresh machine by packaging/setup.sh.

The commands are read from the test scripts themselves (tests/**/*.sh,
.ci/run, packaging/setup.sh and the scripts they run), so the list cannot
drift from what the tests do: a word in command position (the start of a
line or a pipeline stage, after `&&`, `||`, `;`, `$(`, `then`, `do`,
`timeout N`, `exec`, ...) that is not a shell builtin or keyword, a
function or variable the scripts define, or a path of the project's own.
Each must be found on PATH, and the Debian package that owns it must be
either one that every Debian system has (priority required: what a
minimal debootstrap installs) or one that setup.sh's package list installs.

A few commands are the machine's and optional by design; each test that
uses one checks for it first and skips with the reason (OPTIONAL below).
Exit 1 with one line per missing or unprovided command.
"""
import os
import re
import shutil
import subprocess
import sys

# Used only behind a `command -v` guard, and not in Debian's registry
# (or not in the version the test needs): a skip names them.
OPTIONAL = {
    "nvcc": "CUDA's compiler (CUDA 13 is not in Debian 12)",
    "nvidia-smi": "only on a GPU host (tests/gpu)",
    "pyenv": "extra CPython versions where the machine has them",
    "perf": "a peer measured beside profd in bench/, not in tests",
}

BUILTINS = set("""
. : [ [[ ]] alias bg bind break builtin caller case cd command compgen complete
continue declare dirs disown do done echo elif else enable esac eval exec exit
export false fc fg fi for function getopts hash help history if in jobs kill let
local logout mapfile popd printf pushd pwd read readarray readonly return select
set shift shopt source suspend test then time times trap true type typeset
ulimit umask unalias unset until wait while { } ! coproc
""".split())

# Words after which the next word is again a command.
PREFIXES = {"then", "do", "else", "elif", "if", "while", "until", "!", "exec",
            "time", "command", "builtin", "nohup", "setsid", "sudo", "env",
            "chrt", "nice", "ionice", "taskset", "xargs", "stdbuf"}


def script_files(src):
    out = [os.path.join(src, ".ci", "run"), os.path.join(src, "packaging", "setup.sh")]
    for root, _dirs, files in os.walk(os.path.join(src, "tests")):
        out += [os.path.join(root, f) for f in files if f.endswith(".sh")]
    return [f for f in out if os.path.isfile(f)]


def shell_code(text):
    """The text with what is not shell code blanked out: comments, the
    insides of single-quoted strings (awk and Python programs, often over
    many lines), and of double-quoted strings except the command
    substitutions in them ("$(pending)" runs `pending`)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            out.append(text[i:i + 2])
            i += 2
        elif c == "'":
            j = text.find("'", i + 1)
            j = n if j < 0 else j
            out.append("''")
            i = j + 1
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\":
                    i += 2
                elif text.startswith("$(", i) and not text.startswith("$((", i):
                    depth, j = 1, i + 2
                    while j < n and depth:
                        depth += {"(": 1, ")": -1}.get(text[j], 0)
                        j += 1
                    out.append(" ; " + shell_code(text[i + 2:j - 1]) + " ; ")
                    i = j
                else:
                    i += 1
            out.append('""')
            i += 1
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n;"):
            j = text.find("\n", i)
            i = n if j < 0 else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def defined_names(text):
    names = set(re.findall(r"(?:^|[;&|{]\s*)\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)", text, re.M))
    names |= set(re.findall(r"\b([A-Za-z_]\w*)=", text))
    return names


SPLIT = re.compile(r"\$\(|`|&&|\|\||[;|&(\n]|\bthen\b|\bdo\b|\belse\b")


def commands_in(text):
    cmds = set()
    code = shell_code(re.sub(r"\\\n", " ", text))
    code = re.sub(r"\$\(\(.*?\)\)", "0", code)  # arithmetic
    code = re.sub(r"\bcase\b.*?\bin\b", ";", code)
    code = re.sub(r"^\s*[^\s()|]+(\s*\|\s*[^\s()|]+)*\)", ";", code, flags=re.M)  # case patterns
    code = re.sub(r"\$\{[^}]*\}", "x", code)  # ${VAR:?message}
    code = re.sub(r"\b\w+=\([^)]*\)", "", code)  # arrays, over lines too
    for stage in SPLIT.split(code):
        words = stage.split()
        while words and (re.match(r"^[A-Za-z_]\w*=", words[0]) or words[0] in PREFIXES
                         or re.match(r"^-", words[0]) or re.match(r"^\d+(\.\d+)?[smh]?$", words[0])
                         or words[0] == "timeout"):
            words = words[1:]
        if not words:
            continue
        w = words[0]
        if re.match(r"^[a-z][\w.+-]*$", w) and not re.search(r"\.(sh|py)$", w):
            cmds.add(w)
    return cmds


def heredoc_free(text):
    """Remove here-document bodies (Python, C, config files)."""
    out, end = [], None
    for line in text.splitlines():
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        out.append(line)
        m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if m:
            end = m.group(1)
    return "\n".join(out)


def setup_packages(src):
    text = open(os.path.join(src, "packaging", "setup.sh")).read()
    pk = set()
    for m in re.finditer(r'PACKAGES="([^"]*)"', text):
        pk |= set(m.group(1).split())
    for m in re.finditer(r'PACKAGES="\$PACKAGES ([^"]*)"', text):
        pk |= set(m.group(1).split())
    return pk


def owner(path):
    real = os.path.realpath(path)
    for p in (path, real, real.replace("/usr/bin/", "/bin/"), real.replace("/bin/", "/usr/bin/"),
              path.replace("/usr/sbin/", "/sbin/"), path.replace("/sbin/", "/usr/sbin/")):
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split(":")[0].split(",")[0].strip()
    return None


def depends_closure(pkgs):
    """The listed packages and every installed package they depend on:
    what installing them brings to a fresh machine."""
    r = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Depends}, ${Pre-Depends}\n"],
                       capture_output=True, text=True)
    deps = {}
    for line in r.stdout.splitlines():
        name, _, d = line.partition("\t")
        deps[name] = {re.split(r"[\s:(]", alt.strip())[0]
                      for clause in d.split(",") for alt in clause.split("|")[:1] if alt.strip()}
    seen, todo = set(), list(pkgs)
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo += deps.get(p, ())
    return seen


def priority(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Priority} ${Essential}", pkg],
                       capture_output=True, text=True)
    return r.stdout.split() if r.returncode == 0 else []


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "."
    files = script_files(src)
    texts = {f: heredoc_free(open(f, errors="replace").read()) for f in files}
    defined = set()
    for t in texts.values():
        defined |= defined_names(t)
    used = {}
    for f, t in texts.items():
        for c in commands_in(t):
            used.setdefault(c, f)
    provided = depends_closure(setup_packages(src))
    # The system's PATH, as on a fresh machine (not a user's pyenv shims).
    os.environ["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    bad, seen = [], []
    for cmd in sorted(used):
        if cmd in BUILTINS or cmd in defined or cmd in OPTIONAL:
            continue
        path = shutil.which(cmd)
        where = os.path.relpath(used[cmd], src)
        if not path:
            bad.append(f"{cmd}: not found (used in {where})")
            continue
        pkg = owner(path)
        if pkg is None:
            bad.append(f"{cmd}: {path} belongs to no Debian package (used in {where})")
            continue
        prio = priority(pkg)
        # A fresh machine of ours is at least a minimal Debian (debootstrap
        # --variant=minbase): priority required.  "important" (kmod, say)
        # is not there, so it must be asked for.
        base = bool(prio) and (prio[0] == "required" or "yes" in prio[1:])
        if not base and pkg not in provided:
            bad.append(f"{cmd}: from package {pkg}, which setup.sh does not install (used in {where})")
            continue
        seen.append(f"{cmd}({pkg})")
    print(f"tools_check: {len(seen)} commands from {len(files)} scripts, each provided:")
    print("  " + " ".join(seen))
    for b in bad:
        print("FAIL: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
