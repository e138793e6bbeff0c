"""Check the tile and default-entry-layout rules of docs/TPU-OBSERVED.md against XLA:TPU's dumps.

    python -m tests.differential.tpu_tiles_check [--dumps tests/unit/xla_tpu_dumps] [--show 10]

Reads every ``<generation>/<program>/after.txt`` (and ``before.txt``) of the
corpus that ``tests/unit/xla_tpu_dumps/make.py`` writes; needs neither jax
nor libtpu.  Per generation it reports:

* instruction arrays: every array in every instruction's result shape (tuple
  leaves included, every computation) of the AFTER modules, and how many carry
  the tiles ``instruction_tiles`` predicts from element type, dims and
  minor_to_major;
* entry arrays: every array of the ``entry_computation_layout`` (AFTER), against
  ``entry_tiles`` (the rule differs for 8-bit types);
* default entry layouts: every entry parameter and result JAX left to PJRT
  (layout mode ``default``) in the BEFORE header, and how many have the
  minor_to_major ``default_entry_layout`` predicts (the least padded bytes);
* the copies layout assignment added (in AFTER, not in BEFORE), and how many of
  them change only the tiles;
* entry parameters whose ``parameter`` instruction carries other tiles than the
  entry layout states;
* across generations: for each program and pair of generations whose BEFORE
  modules are the same (metadata aside), whether the AFTER modules are too.

The layout grammar (``parse_layout``) is what XLA:TPU prints: ``{`` minor_to_major
``:`` fields ``}``, the fields ``T(a,b)`` (one or more tiles), ``E(bits)``,
``S(memory space)``; any other field is counted as unknown.
Exit status 0 whatever the agreement (it measures); 2 when no dumps are found.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field

from stablehlo_layout.targets import tpu_tiles

from .oracle import parse_shape, strip_attribute

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_DUMPS = os.path.join(REPO, "tests", "unit", "xla_tpu_dumps")

Tile = tuple[int, ...]

BITS = tpu_tiles.BITS


# -- the grammar ------------------------------------------------------------------------------

@dataclass(frozen=True)
class TpuLayout:
    minor_to_major: tuple[int, ...]
    tiles: tuple[Tile, ...] = ()
    element_bits: int | None = None  # E(n)
    memory_space: int | None = None  # S(n)
    unknown: tuple[str, ...] = ()  # fields this parser does not know

    def __str__(self) -> str:
        extra = "".join("(" + ",".join(map(str, t)) + ")" for t in self.tiles)
        fields = (f"T{extra}" if self.tiles else "") + (f"E({self.element_bits})" if self.element_bits else "") + \
                 (f"S({self.memory_space})" if self.memory_space else "") + "".join(self.unknown)
        return "{" + ",".join(map(str, self.minor_to_major)) + (":" + fields if fields else "") + "}"


_FIELD = re.compile(r"(T)((?:\([0-9*,]*\))+)|([A-Z#*]+)\(([^)]*)\)")


def parse_layout(text: str) -> TpuLayout:
    """``{2,1,0:T(8,128)(2,1)}`` -> TpuLayout((2, 1, 0), ((8, 128), (2, 1))); ``{:T(128)}`` for a scalar."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ValueError(f"not a layout: {text!r}")
    m2m_text, _, fields = body[1:-1].partition(":")
    m2m = tuple(int(x) for x in m2m_text.split(",") if x.strip())
    tiles: list[Tile] = []
    bits = space = None
    unknown: list[str] = []
    pos = 0
    while pos < len(fields):
        m = _FIELD.match(fields, pos)
        if m is None:
            unknown.append(fields[pos:])
            break
        if m.group(1):
            for t in re.findall(r"\(([^)]*)\)", m.group(2)):
                tiles.append(tuple(-1 if x == "*" else int(x) for x in t.split(",") if x))
        elif m.group(3) == "E":
            bits = int(m.group(4))
        elif m.group(3) == "S":
            space = int(m.group(4))
        else:
            unknown.append(m.group(0))
        pos = m.end()
    return TpuLayout(m2m, tuple(tiles), bits, space, tuple(unknown))


_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([0-9,]*)\](\{[^}]*\})?")


@dataclass(frozen=True)
class Array:
    element: str
    dims: tuple[int, ...]
    layout: TpuLayout | None
    where: str  # instruction name, or "entry param 3" / "entry result 0"
    opcode: str = ""


def arrays_in(shape_text: str, where: str, opcode: str = "") -> list[Array]:
    out = []
    for el, dims, lay in _ARRAY.findall(shape_text):
        if el == "token":
            continue
        d = tuple(int(x) for x in dims.split(",") if x)
        out.append(Array(el, d, parse_layout(lay) if lay else None, where, opcode))
    return out


_INSTR = re.compile(r"^\s+(ROOT )?%?([\w.\-]+) = ")


@dataclass
class Module:
    instrs: list[Array] = field(default_factory=list)  # every result array of every instruction
    params: list[Array] = field(default_factory=list)  # entry_computation_layout parameters
    results: list[Array] = field(default_factory=list)
    arg_modes: list[str] = field(default_factory=list)
    out_modes: list[str] = field(default_factory=list)
    copies: dict[str, tuple[str, str]] = field(default_factory=dict)  # copy -> (operand, line)
    entry_param_instrs: dict[int, Array] = field(default_factory=dict)


def read_module(path: str) -> Module:
    with open(path) as f:
        text = strip_attribute(f.read(), "metadata")
    mod = Module()
    entry = False
    for line in text.split("\n"):
        if line.startswith("HloModule"):
            k = line.find("entry_computation_layout={")
            if k >= 0:
                p = k + len("entry_computation_layout={")
                _, end = parse_shape(line, p)
                params_text = line[p:end]
                mod.params = [Array(a.element, a.dims, a.layout, f"entry param {i}")
                              for i, a in enumerate(arrays_in(params_text, ""))]
                if line.startswith("->", end):
                    _, end2 = parse_shape(line, end + 2)
                    mod.results = [Array(a.element, a.dims, a.layout, f"entry result {i}")
                                   for i, a in enumerate(arrays_in(line[end + 2:end2], ""))]
            for key, attr in (("arg_modes", "arg_layout_modes"), ("out_modes", "out_layout_modes")):
                m = re.search(rf'{attr}="([^"]*)"', line)
                if m:
                    setattr(mod, key, m.group(1).split(";"))
            continue
        if line.startswith("ENTRY"):
            entry = True
        elif re.match(r"^%?[\w.\-]+ \(", line):
            entry = False
        m = _INSTR.match(line)
        if m is None:
            continue
        _, end = parse_shape(line, m.end())
        om = re.match(r"\s*([a-z][\w\-]*)\(", line[end:])
        opcode = om.group(1) if om else "?"
        found = arrays_in(line[m.end():end], m.group(2), opcode)
        mod.instrs.extend(found)
        if opcode == "copy":
            operand = re.match(r"\s*copy\(%?([\w.\-]+)\)", line[end:])
            mod.copies[m.group(2)] = (operand.group(1) if operand else "?", line.strip())
        if opcode == "parameter" and entry and len(found) == 1:
            num = re.search(r"parameter\((\d+)\)", line[end:])
            if num:
                mod.entry_param_instrs[int(num.group(1))] = found[0]
    return mod


# -- the rules (the package's own: stablehlo_layout/targets/tpu_tiles.py) ------------------------

def instruction_tiles(element: str, dims: tuple[int, ...], m2m: tuple[int, ...]) -> tuple[Tile, ...] | None:
    return tpu_tiles.tiles(element, dims, m2m)


def entry_tiles(element: str, dims: tuple[int, ...], m2m: tuple[int, ...]) -> tuple[Tile, ...] | None:
    return tpu_tiles.tiles(element, dims, m2m, entry=True)


padded_elements = tpu_tiles.padded_elements
default_entry_layout = tpu_tiles.default_entry_layout


# -- the check --------------------------------------------------------------------------------

@dataclass
class Tally:
    ok: int = 0
    total: int = 0
    misses: list[str] = field(default_factory=list)

    def add(self, good: bool, what: str) -> None:
        self.total += 1
        if good:
            self.ok += 1
        else:
            self.misses.append(what)

    def line(self) -> str:
        pct = f"{100.0 * self.ok / self.total:.2f}%" if self.total else "n/a"
        return f"{self.ok}/{self.total} ({pct})"


def _tiles_text(tiles: tuple[Tile, ...] | None) -> str:
    return "none" if tiles is None else "T" + "".join("(" + ",".join(map(str, t)) + ")" for t in tiles)


def check_generation(folder: str) -> dict[str, object]:
    inst, entry, default, row_major, unknown = Tally(), Tally(), Tally(), Tally(), Counter()
    fields = Counter()
    copies = tiling_only = 0
    tiling_only_lines: list[str] = []
    param_mismatch: list[str] = []
    programs = sorted(d for d in os.listdir(folder) if os.path.isfile(os.path.join(folder, d, "after.txt")))
    for prog in programs:
        after = read_module(os.path.join(folder, prog, "after.txt"))
        before = read_module(os.path.join(folder, prog, "before.txt"))
        for a in after.instrs:
            if a.layout is None:
                continue
            unknown.update(a.layout.unknown)
            fields.update(["T"] if a.layout.tiles else [])
            fields.update(["E"] if a.layout.element_bits is not None else [])
            fields.update(["S"] if a.layout.memory_space is not None else [])
            want = instruction_tiles(a.element, a.dims, a.layout.minor_to_major)
            inst.add(want == a.layout.tiles, f"{prog}: {a.where} ({a.opcode}) {a.element}{list(a.dims)}"
                                             f"{a.layout} | rule {_tiles_text(want)}")
        for a in after.params + after.results:
            if a.layout is None:
                continue
            want = entry_tiles(a.element, a.dims, a.layout.minor_to_major)
            entry.add(want == a.layout.tiles, f"{prog}: {a.where} {a.element}{list(a.dims)}{a.layout} | rule "
                                              f"{_tiles_text(want)}")
        for arrays, modes in ((before.params, before.arg_modes), (before.results, before.out_modes)):
            for k, a in enumerate(arrays):
                if a.layout is None or len(a.dims) < 2 or k >= len(modes) or modes[k] != "default":
                    continue
                want_m2m = default_entry_layout(a.element, a.dims)
                row_major.add(a.layout.minor_to_major == tuple(range(len(a.dims) - 1, -1, -1)), "")
                default.add(want_m2m == a.layout.minor_to_major,
                            f"{prog}: {a.where} {a.element}{list(a.dims)}{a.layout} | rule "
                            f"{{{','.join(map(str, want_m2m or ()))}}}")
        layouts = {a.where: a.layout for a in after.instrs}
        before_copies = set(before.copies)
        for name, (operand, line) in after.copies.items():
            if name in before_copies:
                continue
            copies += 1
            src, dst = layouts.get(operand), layouts.get(name)
            if src is not None and dst is not None and src.minor_to_major == dst.minor_to_major:
                tiling_only += 1
                tiling_only_lines.append(f"{prog}: {line[:160]}")
        for i, a in enumerate(after.params):
            p = after.entry_param_instrs.get(i)
            if p is not None and a.layout is not None and p.layout is not None and p.layout != a.layout:
                param_mismatch.append(f"{prog}: entry param {i} {a.element}{list(a.dims)}{a.layout} | "
                                      f"parameter instruction {p.layout}")
    return {"programs": len(programs), "instruction": inst, "entry": entry, "default": default,
            "row_major": row_major, "fields": fields,
            "unknown_fields": unknown, "copies": copies, "tiling_only": tiling_only,
            "tiling_only_lines": tiling_only_lines, "param_mismatch": param_mismatch}


def _module_text(path: str) -> str:
    """The module without metadata, source tables and the module-name line (what two generations may share)."""
    with open(path) as f:
        text = strip_attribute(f.read(), "metadata")
    return "\n".join(x for x in text.split("\n") if x.startswith((" ", "ENTRY", "%", "}")))


def across_generations(dumps: str, gens: list[str]) -> tuple[tuple[int, int], int]:
    """((pairs whose BEFORE and AFTER agree, pairs whose BEFORE agrees but AFTER does not), pairs whose BEFORE differs)."""
    agree = disagree = differ = 0
    for g1, g2 in itertools.combinations(gens, 2):
        for prog in sorted(os.listdir(os.path.join(dumps, g1))):
            p1, p2 = os.path.join(dumps, g1, prog), os.path.join(dumps, g2, prog)
            if not (os.path.isfile(os.path.join(p1, "after.txt")) and os.path.isfile(os.path.join(p2, "after.txt"))):
                continue
            if _module_text(os.path.join(p1, "before.txt")) != _module_text(os.path.join(p2, "before.txt")):
                differ += 1
            elif _module_text(os.path.join(p1, "after.txt")) == _module_text(os.path.join(p2, "after.txt")):
                agree += 1
            else:
                disagree += 1
    return (agree, disagree), differ


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dumps", default=DEFAULT_DUMPS)
    ap.add_argument("--show", type=int, default=10, help="misses to list per rule and generation")
    a = ap.parse_args(argv)
    gens = sorted(d for d in os.listdir(a.dumps) if glob.glob(os.path.join(a.dumps, d, "*", "after.txt"))) \
        if os.path.isdir(a.dumps) else []
    if not gens:
        print(f"tpu_tiles_check: no dumps under {a.dumps}", file=sys.stderr)
        return 2
    order = ["v2", "v3", "v4", "v5e", "v5p", "v6e", "tpu7x"]
    gens.sort(key=lambda g: order.index(g) if g in order else len(order))
    for g in gens:
        r = check_generation(os.path.join(a.dumps, g))
        print(f"== {g}: {r['programs']} programs")
        for key, label in (("instruction", "instruction arrays with the predicted tiles"),
                           ("entry", "entry arrays with the predicted tiles      "),
                           ("default", "default entry layouts predicted (rank>=2) ")):
            t = r[key]
            print(f"  {label}: {t.line()}")  # type: ignore[attr-defined]
            for miss in t.misses[:a.show]:  # type: ignore[attr-defined]
                print(f"      miss {miss}")
        print(f"  of those default entry layouts, row-major: {r['row_major'].line()}")  # type: ignore[attr-defined]
        print(f"  layout fields on instruction arrays: {dict(r['fields'])}")
        print(f"  copies added by layout assignment: {r['copies']}, of which change only the tiles: "
              f"{r['tiling_only']}")
        for line in r["tiling_only_lines"][:a.show]:  # type: ignore[index]
            print(f"      {line}")
        mism = r["param_mismatch"]
        print(f"  entry params whose parameter instruction has another layout than the entry layout: {len(mism)}")
        for line in mism[:a.show]:  # type: ignore[index]
            print(f"      {line}")
        if r["unknown_fields"]:
            print(f"  layout fields not parsed: {dict(r['unknown_fields'])}")
    same, differ = across_generations(a.dumps, gens)
    print(f"== across generations: program pairs with the same BEFORE module (metadata aside): {same[0] + same[1]}, "
          f"of which the AFTER modules are the same too: {same[0]}; pairs whose BEFORE differs: {differ}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
