"""Shrink a failing fuzz program to a small reproducer.

    python -m tests.fuzz.minimize SEED [--target T] [--prop PROP] [--no-execute]

Repeatedly deletes line ranges (ddmin style, largest first), unused @main
results, ``mhlo.layout_mode`` attributes and ``stablehlo.`` ops' unused results
while the module still verifies and the same property still fails for the same
target.  Prints the smallest module found.
"""

from __future__ import annotations

import argparse
import re
import sys

from .generator import Program, generate, verifies
from .properties import Cache, _pins, check_target


def failing(text: str, mode: str, target: str, prop: str, seed: int, execute: bool, cache: Cache) -> bool:
    if verifies(text) is not None:
        return False
    if execute:
        status, _ = cache.run(text, seed)
        if status != "ok":
            return False
    fails, _ = check_target(text, mode, target, _pins(text), seed, execute, cache)
    return any(f.prop == prop for f in fails)


_RET = re.compile(r"^(\s*)func\.return (.*) : (.*)$")


def _drop_result(lines: list[str], k: int) -> list[str] | None:
    """Drop result k of @main (signature and return)."""
    out = list(lines)
    ret_i = head_i = None
    for i, line in enumerate(out):
        if "func.func public @main" in line:
            head_i = i
        if head_i is not None and ret_i is None and _RET.match(line):
            ret_i = i
    if head_i is None or ret_i is None:
        return None
    m = _RET.match(out[ret_i])
    vals = [v.strip() for v in m.group(2).split(",")]
    if len(vals) < 2 or k >= len(vals):
        return None
    types = _split_types(m.group(3))
    del vals[k], types[k]
    out[ret_i] = f"{m.group(1)}func.return {', '.join(vals)} : {', '.join(types)}"
    head = out[head_i]
    sig = head[head.index("-> (") + 4: head.rindex(") {")]
    res = _split_types(sig)
    del res[k]
    out[head_i] = head[: head.index("-> (") + 4] + ", ".join(res) + ") {"
    return out


def _split_types(s: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "<{(":
            depth += 1
        elif ch in ">})":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


_DEF = re.compile(r"^\s*(%[\w]+) = (.*)$")


def _span_end(lines: list[str], i: int) -> int | None:
    """The last line of the op or function starting at line i, if it spans lines."""
    line = lines[i].rstrip()
    if not (line.endswith("({") or line.startswith("  func.func private")):
        return None
    depth = 0
    for j in range(i, len(lines)):
        depth += lines[j].count("{") - lines[j].count("}")
        if depth <= 0 and j > i:
            return j
    return None


def minimize(text: str, pred) -> str:
    lines = text.splitlines()
    changed = True
    while changed:
        changed = False
        # drop @main results
        for k in range(8):
            cand = _drop_result(lines, k)
            if cand is not None and pred("\n".join(cand) + "\n"):
                lines, changed = cand, True
        # drop layout_mode attributes
        for i, line in enumerate(lines):
            for m in list(re.finditer(r' \{mhlo\.layout_mode = "[^"]*"\}', line)):
                cand = list(lines)
                cand[i] = line[: m.start()] + line[m.end():]
                if pred("\n".join(cand) + "\n"):
                    lines, changed = cand, True
                    break
        # delete whole ops with regions and whole private functions
        i = 0
        while i < len(lines):
            end = _span_end(lines, i)
            if end is not None:
                cand = lines[:i] + lines[end + 1:]
                if pred("\n".join(cand) + "\n"):
                    lines, changed = cand, True
                    continue
            i += 1
        # bypass an op: delete it and let its users read one of its operands
        i = 0
        while i < len(lines):
            m = _DEF.match(lines[i])
            done = False
            if m and _span_end(lines, i) is None:
                res = m.group(1)
                for operand in dict.fromkeys(re.findall(r"%[\w#]+", m.group(2))):
                    if operand == res:
                        continue
                    pat = re.compile(re.escape(res) + r"(?![\w#])")
                    cand = lines[:i] + [pat.sub(operand, x) for x in lines[i + 1:]]
                    if pred("\n".join(cand) + "\n"):
                        lines, changed, done = cand, True, True
                        break
            if not done:
                i += 1
        # delete line ranges
        size = max(1, len(lines) // 2)
        while size >= 1:
            i = 1
            while i + size <= len(lines) - 1:
                cand = lines[:i] + lines[i + size:]
                if pred("\n".join(cand) + "\n"):
                    lines, changed = cand, True
                else:
                    i += 1
            size //= 2
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("seed", type=int)
    ap.add_argument("--target", default="generic")
    ap.add_argument("--prop", required=True)
    ap.add_argument("--no-execute", action="store_true")
    ap.add_argument("--file", help="minimize this file instead of the seed's program")
    ap.add_argument("--mode", default=None)
    a = ap.parse_args(argv)
    prog: Program = generate(a.seed)
    text = open(a.file).read() if a.file else prog.text
    mode = a.mode or prog.entry_mode
    cache = Cache()
    execute = not a.no_execute

    def pred(t: str) -> bool:
        return failing(t, mode, a.target, a.prop, a.seed, execute, cache)

    if not pred(text):
        print("the program does not fail that way", file=sys.stderr)
        return 1
    small = minimize(text, pred)
    sys.stdout.write(f"// seed {a.seed} target {a.target} entry-layouts {mode} prop {a.prop}\n{small}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
