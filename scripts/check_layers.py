#!/usr/bin/env python3
"""check_layers.py — the arrows of /ARCHITECTURE (doc/architecture.md) that must never exist,
checked on the source and on the built server library. Run by ctest (test_layers).

  1. No circle of calls among server/ files: with file A calling a function file B defines (read
     from the library's symbol tables with nm), the files form no cycle.
  2. microhttpd.h is seen only by server files that use it: a server file (.c or .h) that
     includes it, directly or through server/ headers, names an MHD_ symbol itself.
  3. No server/ file includes a core/ header (the server reaches the core through the codec).
  4. Only the store's files include sqlite3.h or libpq-fe.h; codec/ includes neither, nor
     microhttpd.h or uv.h; core/ includes no jansson, SQLite, libpq, libuv, libmicrohttpd, nor any
     codec/, server/ or cli/ header; cli/ includes no server/ header.

Usage: scripts/check_layers.py [--lib build/libfathom_server.a]   (exit 1 and a list when broken)
Without --lib, check 1 is skipped (the others read only the source).
"""
import argparse
import os
import re
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def source(path):
    """The file's text without comments and string literals (what the compiler would see)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            i = text.find("*/", i + 2)
            i = n if i < 0 else i + 2
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            # keep #include "..." names, drop other literals
            line_start = text.rfind("\n", 0, i) + 1
            keep = c == '"' and text[line_start:i].lstrip().startswith("#")
            out.append(text[i:j + 1] if keep else c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def files(directory, exts=(".c", ".h")):
    d = os.path.join(ROOT, directory)
    return sorted(f for f in os.listdir(d) if f.endswith(exts))


def includes(directory, name):
    return INCLUDE.findall(source(os.path.join(ROOT, directory, name)))


def core_headers():
    out = set()
    for mod in os.listdir(os.path.join(ROOT, "core")):
        d = os.path.join(ROOT, "core", mod)
        if os.path.isdir(d):
            out.update(f for f in os.listdir(d) if f.endswith(".h"))
    return out


def check_mhd(problems):
    server = files("server")
    direct = {f: includes("server", f) for f in server}

    def sees(f, seen=None):
        seen = seen if seen is not None else set()
        if f in seen:
            return False
        seen.add(f)
        return any(h == "microhttpd.h" or (h in direct and sees(h, seen)) for h in direct[f])

    for f in server:
        if sees(f) and not re.search(r"\bMHD_\w+", source(os.path.join(ROOT, "server", f))):
            via = "directly" if "microhttpd.h" in direct[f] else "through " + ", ".join(
                h for h in direct[f] if h in direct and sees(h))
            problems.append(f"server/{f} sees microhttpd.h ({via}) but uses no MHD symbol")


def check_includes(problems):
    core = core_headers()
    codec = set(files("codec", (".h",)))
    server_h = set(files("server", (".h",)))
    cli_h = set(files("cli", (".h",)))
    store = re.compile(r"^store_(sqlite|pg)")
    for f in files("server"):
        for h in includes("server", f):
            if h in core:
                problems.append(f"server/{f} includes the core header {h} (reach it through the codec)")
            if h in ("sqlite3.h", "libpq-fe.h") and not store.match(f):
                problems.append(f"server/{f} includes {h}: only the store's backends may")
    for f in files("codec"):
        for h in includes("codec", f):
            if h in ("sqlite3.h", "libpq-fe.h", "microhttpd.h", "uv.h") or h in server_h:
                problems.append(f"codec/{f} includes {h}")
    for mod in sorted(os.listdir(os.path.join(ROOT, "core"))):
        if not os.path.isdir(os.path.join(ROOT, "core", mod)):
            continue
        for f in files(os.path.join("core", mod)):
            for h in includes(os.path.join("core", mod), f):
                if (h in ("jansson.h", "sqlite3.h", "libpq-fe.h", "uv.h", "microhttpd.h")
                        or (h in codec and h not in core) or h in server_h or h in cli_h):
                    problems.append(f"core/{mod}/{f} includes {h}")
    for f in files("cli"):
        for h in includes("cli", f):
            if h in server_h and h not in codec:
                problems.append(f"cli/{f} includes the server header {h}")


def symbols(lib):
    """{file: (defined, undefined)} of each member of a static library."""
    out = subprocess.run(["nm", "-A", lib], capture_output=True, text=True, check=True).stdout
    table = defaultdict(lambda: (set(), set()))
    for line in out.splitlines():
        # "lib.a:member.c.o:<address> <type> <name>", the address blank for undefined symbols
        m = re.match(r"^.*?:([^:]+):\s*(.*)$", line)
        if not m:
            continue
        name = re.sub(r"\.c\.o$|\.o$", "", m.group(1))
        parts = m.group(2).split()
        if len(parts) == 3 and parts[1] in "TDBRCG":
            table[name][0].add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            table[name][1].add(parts[1])
    return table


def cycles(graph):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def check_calls(lib, problems):
    table = symbols(lib)
    owner = {s: f for f, (defined, _) in table.items() for s in defined}
    graph = defaultdict(set)
    why = {}
    for f, (_, used) in table.items():
        graph[f]
        for s in used:
            g = owner.get(s)
            if g and g != f:
                graph[f].add(g)
                why.setdefault((f, g), s)
    for comp in cycles(graph):
        edges = [f"{a} -> {b} ({why[(a, b)]})" for a in comp for b in sorted(graph[a]) if b in comp]
        problems.append("a circle of calls among server files: " + ", ".join(comp) +
                        "\n      " + "\n      ".join(edges))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", help="the built server library (libfathom_server.a)")
    args = ap.parse_args()
    problems = []
    check_mhd(problems)
    check_includes(problems)
    if args.lib:
        check_calls(args.lib, problems)
    for p in problems:
        print("layers: " + p)
    print(f"layers: {len(problems)} problem(s)" + ("" if args.lib else " (calls not checked: no --lib)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
