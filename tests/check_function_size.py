#!/usr/bin/env python3
"""Functions longer than a limit, in C++ sources: the checking half of "split long functions
into named steps".

    check_function_size.py [--max N] DIR...

A function is a brace block at namespace or class scope whose head ends in a parameter list
(with const, noexcept, override, a trailing return type or a constructor's initialisers);
its length runs from the line its head starts on to its closing brace, lambdas and nested
blocks included. Comments, strings and raw strings are blanked first. Exit 1 with one line
per function over the limit (default 80), 0 when there is none.
"""
import os
import re
import sys


def strip(src):
    out = []; i = 0; n = len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i); j = n if j < 0 else j; out.append(" " * (j - i)); i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2); j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j])); i = j
        elif src.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', src[i:]); d = m.group(1); e = src.find(")" + d + '"', i); e += len(d) + 2
            out.append(re.sub(r"[^\n]", " ", src[i:e])); i = e
        elif c == '"' or (c == "'" and not (i > 0 and src[i-1].isalnum())):
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(" " * (j + 1 - i)); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)
KW = {"if", "for", "while", "switch", "catch", "return"}
def scan(path):
    s = strip(open(path).read()); res = []
    stack = []  # (kind, start_line)
    last = 0
    for i, c in enumerate(s):
        if c == "{":
            head = s[last:i]
            inside_fn = any(k == "fn" for k, _, _ in stack)
            kind = "blk"
            if not inside_fn:
                h = " ".join(head.split())
                if re.search(r"\b(class|struct|namespace|enum|union)\b", h) and "(" not in h.split("{")[0][:1] and not re.search(r"\)\s*(const|noexcept|override|final|->.*)?\s*$", h):
                    kind = "scope"
                elif re.search(r"\)\s*(const)?\s*(noexcept)?\s*(override|final)?\s*(->\s*[\w:<>,\s&*]+)?$", h) or re.search(r"\)\s*:\s*.*\)$", h) or re.search(r"\)\s*:.*\}?$", h):
                    first = re.match(r"\s*(\w+)", h)
                    if first and first.group(1) in KW: kind = "blk"
                    else: kind = "fn"
                elif h.endswith("=") or h.endswith("extern \"C\""):
                    kind = "blk"
                elif stack and stack[-1][0] == "scope" or not stack:
                    kind = "scope" if re.search(r"\b(class|struct|namespace|enum|union|extern)\b", h) else "blk"
            start = s.count("\n", 0, i - len(head) + (len(head) - len(head.lstrip()))) + 1
            m = re.search(r"([\w:~]+)\s*\(", head)
            stack.append((kind, start, m.group(1) if m else " ".join(head.split())[-40:]))
            last = i + 1
        elif c == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "fn":
                    end = s.count("\n", 0, i) + 1
                    res.append((end - start + 1, start, name))
            last = i + 1
        elif c == ";":
            last = i + 1
    return res
def main(argv):
    limit = 80
    if len(argv) >= 2 and argv[0] == "--max":
        limit = int(argv[1])
        argv = argv[2:]
    rows = []
    for root in argv:
        for dp, _, fs in os.walk(root):
            for f in sorted(fs):
                if f.endswith((".cpp", ".hpp", ".cu", ".cuh", ".h")):
                    p = os.path.join(dp, f)
                    for n, st, name in scan(p):
                        if n > limit:
                            rows.append((n, p, st, name))
    for n, p, st, name in sorted(rows, reverse=True):
        print(f"{p}:{st}: {n} lines (at most {limit}): {name}")
    return 1 if rows else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
