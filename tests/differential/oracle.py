"""XLA's CPU compiler as the oracle: compile a program, keep the layout-assignment dumps.

``run_oracle(program, out_dir)`` compiles ``program`` with
``xla_dump_to``/``xla_dump_hlo_pass_re=layout-assignment`` into a fresh temporary
directory, copies the module's ``before_layout-assignment`` and
``after_layout-assignment`` dumps to ``out_dir/before.txt`` and
``out_dir/after.txt`` and writes ``out_dir/meta.json`` (status, skip reason,
program description).

``parse_hlo(text)`` reads HLO text (metadata stripped first) into plain
Python data: every instruction of every computation with its shape (tuple
shapes are nested lists, arrays carry their minor_to_major layout or
``None``), opcode, operand names, called computations and source line.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from stablehlo_layout.ir.metadata import closing_bracket

# Bump when the way programs are compiled or dumped changes (it keys the dump cache;
# parsing changes do not need a bump).
ORACLE_VERSION = 1

# -- shapes --------------------------------------------------------------------

ELEMENT_BYTES = {
    "pred": 1, "s2": 1, "s4": 1, "u2": 1, "u4": 1, "s8": 1, "u8": 1,
    "f8e4m3fn": 1, "f8e5m2": 1, "f8e4m3b11fnuz": 1, "f8e4m3fnuz": 1, "f8e5m2fnuz": 1,
    "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
    "s32": 4, "u32": 4, "f32": 4,
    "s64": 8, "u64": 8, "f64": 8, "c64": 8,
    "c128": 16,
}


@dataclass(frozen=True)
class ArrayShape:
    element: str
    dims: tuple[int, ...]
    layout: tuple[int, ...] | None  # minor_to_major; None when the text has none
    # What XLA:TPU prints after the minor_to_major, e.g. "T(8,128)(2,1)" (tiles,
    # element bits E(n), memory space S(n)); None when the layout has no ":" part.
    # Kept out of equality so that CPU / GPU comparisons of shapes stay minor_to_major.
    tiling: str | None = field(default=None, compare=False)

    @property
    def full_layout(self) -> str:
        """The layout as XLA prints it, fields included: ``{1,0:T(8,128)}``, ``{:T(128)}``; "-" without one."""
        if self.layout is None:
            return "-"
        fields = f":{self.tiling}" if self.tiling else ""
        return "{" + ",".join(map(str, self.layout)) + fields + "}"

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def bytes(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n * ELEMENT_BYTES.get(self.element, 4)

    def __str__(self) -> str:
        lay = "" if self.layout is None else self.full_layout
        return f"{self.element}[{','.join(map(str, self.dims))}]{lay}"


Shape = Any  # ArrayShape | list[Shape] (a tuple) | str ("token[]")


def _skip(text: str, pos: int) -> int:
    """Skip blanks and ``/*index=5*/`` comments."""
    while pos < len(text):
        if text[pos] == " ":
            pos += 1
        elif text.startswith("/*", pos):
            end = text.find("*/", pos)
            pos = len(text) if end < 0 else end + 2
        else:
            break
    return pos


def parse_shape(text: str, pos: int = 0) -> tuple[Shape, int]:
    """Parse one HLO shape starting at ``pos``; return it and the position after it."""
    pos = _skip(text, pos)
    if text.startswith("(", pos):
        pos += 1
        elems: list[Shape] = []
        while True:
            pos = _skip(text, pos)
            if text[pos] == ")":
                return elems, pos + 1
            s, pos = parse_shape(text, pos)
            elems.append(s)
            pos = _skip(text, pos)
            if text[pos] == ",":
                pos += 1
    m = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]").match(text, pos)
    if m is None:
        raise ValueError(f"cannot parse a shape at {text[pos:pos + 40]!r}")
    element = m.group(1)
    pos = m.end()
    if element == "token":
        return "token[]", pos
    dims = tuple(int(d.lstrip("<=")) for d in m.group(2).split(",") if d.strip())
    layout = None
    tiling = None
    if text.startswith("{", pos):
        end = text.index("}", pos)  # the fields use parentheses only: T(8,128)(2,1), S(1)
        body, colon, fields = text[pos + 1:end].partition(":")
        layout = tuple(int(x) for x in body.split(",") if x.strip())
        tiling = fields if colon and fields else None
        pos = end + 1
    elif not dims:
        layout = ()  # HLO text prints no layout for a scalar without fields
    return ArrayShape(element, dims, layout, tiling), pos


def shape_at(shape: Shape, index: tuple[int, ...]) -> Shape | None:
    for i in index:
        if not isinstance(shape, list) or i >= len(shape):
            return None
        shape = shape[i]
    return shape


def leaves(shape: Shape, prefix: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], Shape]]:
    if isinstance(shape, list):
        out = []
        for i, s in enumerate(shape):
            out.extend(leaves(s, prefix + (i,)))
        return out
    return [(prefix, shape)]


def format_layout(layout: tuple[int, ...] | None) -> str:
    return "-" if layout is None else "{" + ",".join(map(str, layout)) + "}"


# -- HLO text ------------------------------------------------------------------

def strip_attribute(text: str, name: str = "metadata") -> str:
    """Remove every ``, name={...}`` clause (balanced braces, quoted strings skipped)."""
    out = []
    i = 0
    key = f"{name}={{"
    while True:
        j = text.find(key, i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        # Only a clause: preceded by ", " (or start of attribute list).
        start = j
        k = j - 1
        while k >= 0 and text[k] == " ":
            k -= 1
        if k >= 0 and text[k] == ",":
            start = k
        # Skip when inside a string on this line (odd number of quotes before).
        line_start = text.rfind("\n", 0, j) + 1
        segment = text[line_start:j].replace('\\"', "")
        if segment.count('"') % 2 == 1:
            out.append(text[i:j + len(key)])
            i = j + len(key)
            continue
        p = closing_bracket(text, j + len(key) - 1, "{", "}")
        out.append(text[i:start])
        i = (len(text) if p is None else p) + 1


@dataclass
class HloInstr:
    name: str
    shape: Shape
    opcode: str
    operands: list[str]
    comp: str
    is_root: bool
    line: str
    line_no: int
    attrs: str
    parameter_number: int | None = None
    gte_index: int | None = None
    called: dict[str, list[str]] = field(default_factory=dict)  # attr -> computation names
    users: list[str] = field(default_factory=list)


@dataclass
class HloComp:
    name: str
    is_entry: bool
    instrs: list[str] = field(default_factory=list)
    root: str | None = None
    params: dict[int, str] = field(default_factory=dict)
    callers: list[tuple[str, str, int]] = field(default_factory=list)  # (instr, attr, position)


@dataclass
class HloModule:
    name: str
    comps: dict[str, HloComp]
    instrs: dict[str, HloInstr]
    entry: str
    entry_params: list[Shape]  # from entry_computation_layout
    entry_result: Shape | None


_HEADER = re.compile(r"^HloModule ([^\s,]+)")
_COMP = re.compile(r"^(ENTRY )?%?([\w.\-]+) \(.*\{\s*$")
_INSTR = re.compile(r"^\s+(ROOT )?%?([\w.\-]+) = ")
_OPCODE = re.compile(r"\s*([a-z][\w\-]*)\(")
_CALL_ATTRS = ("to_apply", "condition", "body", "calls", "true_computation", "false_computation",
               "branch_computations", "called_computations")


def _balanced(text: str, pos: int, open_: str = "(", close: str = ")") -> int:
    """Index of the bracket closing the one at ``pos`` (strings skipped)."""
    p = closing_bracket(text, pos, open_, close)
    if p is not None:
        return p
    raise ValueError(f"unbalanced {open_!r} in {text[pos:pos + 60]!r}")


_OPERAND = re.compile(r"%([\w.\-]+)((?:#\d+)*)")


def _element_operand(base: str, suffix: str, comp: str, no: int,
                     pending: dict[str, tuple[str, int, str, int]]) -> str:
    """The operand's name; `%t#i#j` registers the implicit get-tuple-elements it names."""
    name = base
    for index in suffix.split("#")[1:]:
        inner, name = name, f"{name}#{index}"
        pending.setdefault(name, (inner, int(index), comp, no))
    return name


def parse_hlo(text: str) -> HloModule:
    text = strip_attribute(text, "metadata")
    lines = text.split("\n")
    module_name = ""
    entry_params: list[Shape] = []
    entry_result: Shape | None = None
    comps: dict[str, HloComp] = {}
    instrs: dict[str, HloInstr] = {}
    current: HloComp | None = None
    entry = ""
    pending: dict[str, tuple[str, int, str, int]] = {}  # "t#i" -> (t, i, computation, line)
    for no, line in enumerate(lines, 1):
        if line.startswith("HloModule"):
            m = _HEADER.match(line)
            module_name = m.group(1) if m else ""
            k = line.find("entry_computation_layout={")
            if k >= 0:
                p = k + len("entry_computation_layout={")
                params, p = parse_shape(line, p)
                entry_params = params if isinstance(params, list) else [params]
                if line.startswith("->", p):
                    entry_result, _ = parse_shape(line, p + 2)
            continue
        if current is None:
            m = _COMP.match(line)
            if m:
                current = HloComp(m.group(2), bool(m.group(1)))
                comps[current.name] = current
                if current.is_entry:
                    entry = current.name
            continue
        if line.startswith("}"):
            current = None
            continue
        m = _INSTR.match(line)
        if m is None:
            continue
        name = m.group(2)
        shape, p = parse_shape(line, m.end())
        om = _OPCODE.match(line, p)
        if om is None:
            raise ValueError(f"line {no}: cannot find the opcode in {line.strip()[:120]!r}")
        opcode = om.group(1)
        close = _balanced(line, om.end() - 1)
        operand_text = line[om.end():close]
        attrs = line[close + 1:]
        ins = HloInstr(name, shape, opcode, [], current.name, bool(m.group(1)), line.strip(), no, attrs)
        if opcode == "parameter":
            ins.parameter_number = int(operand_text.strip())
            current.params[ins.parameter_number] = name
        else:
            ins.operands = [_element_operand(base, suffix, current.name, no, pending)
                            for base, suffix in _OPERAND.findall(operand_text)]
        if opcode == "get-tuple-element":
            gm = re.search(r"\bindex=(\d+)", attrs)
            ins.gte_index = int(gm.group(1)) if gm else None
        for attr in _CALL_ATTRS:
            am = re.search(rf"\b{attr}=(\{{[^}}]*\}}|%?[\w.\-]+)", attrs)
            if am:
                ins.called[attr] = re.findall(r"%?([\w.\-]+)", am.group(1).strip("{}"))
        current.instrs.append(name)
        if ins.is_root:
            current.root = name
        instrs[name] = ins
    for name, (base, index, comp, no) in pending.items():
        # XLA 0.12 prints no get-tuple-element instructions: a tuple element
        # is an operand `%t#i`. Each becomes the get-tuple-element it stands
        # for, so that walks through tuples see the same graph on every version.
        b = instrs.get(base)
        shape = shape_at(b.shape, (index,)) if b is not None else None
        instrs[name] = HloInstr(name, shape, "get-tuple-element", [base], comp, False,
                                f"%{name} = get-tuple-element(%{base}), index={index}  (printed inline)",
                                no, "", gte_index=index)
        comps[comp].instrs.append(name)
    for ins in instrs.values():
        for op in ins.operands:
            if op in instrs:
                instrs[op].users.append(ins.name)
        for attr, names in ins.called.items():
            for k, c in enumerate(names):
                if c in comps:
                    comps[c].callers.append((ins.name, attr, k))
    return HloModule(module_name, comps, instrs, entry, entry_params, entry_result)


def instruction_names(text: str) -> set[str]:
    """Names of every instruction in an HLO text (cheap: no shape parsing)."""
    names = set()
    for line in text.split("\n"):
        m = _INSTR.match(line)
        if m:
            names.add(m.group(2))
    return names


# -- compiling ------------------------------------------------------------------

@dataclass
class OracleResult:
    status: str  # "ok" or "skipped"
    reason: str = ""
    before: str | None = None  # path
    after: str | None = None  # path
    jax_error: str = ""  # an error JAX raised after XLA had compiled (dumps still valid)
    seconds: float = 0.0
    program: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "jax_error": self.jax_error,
                "seconds": round(self.seconds, 3), "program": self.program}


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(error).__name__}: {first[:300]}"


def _skip_reason(error: BaseException) -> str:
    """A stable category for a refusal (used to count skips)."""
    msg = str(error)
    if "Unexpected XLA layout override" in msg:
        return "jax: XLA overrode a requested layout"
    if "AUTO" in msg or "auto" in msg.lower() and "layout" in msg.lower():
        return "refused: AUTO layout"
    if "layout" in msg.lower():
        return "refused: layout"
    return f"error: {type(error).__name__}"


def find_dumps(dump_dir: str, module_hint: str = "") -> tuple[str | None, str | None]:
    """The before/after layout-assignment dumps of one module in ``dump_dir``."""
    befores = sorted(glob.glob(os.path.join(dump_dir, "*before_layout-assignment.txt")))
    afters = sorted(glob.glob(os.path.join(dump_dir, "*after_layout-assignment*.txt")))

    def module_of(path: str) -> str:
        base = os.path.basename(path)
        m = re.match(r"(module_\d+\.[^.]+)\.", base)
        return m.group(1) if m else base

    pairs = []
    for b in befores:
        mod = module_of(b)
        a = [x for x in afters if module_of(x) == mod]
        if a:
            pairs.append((mod, b, a[0]))
    if not pairs:
        return None, None
    if module_hint:
        hinted = [p for p in pairs if module_hint in p[0]]
        if hinted:
            pairs = hinted
    _, b, a = pairs[-1]
    return b, a


def keep_dumps(res: OracleResult, before: str, after: str, out_dir: str) -> OracleResult:
    """Copy XLA's two layout-assignment dumps into the program's cache folder: the result is ok."""
    res.before = os.path.join(out_dir, "before.txt")
    res.after = os.path.join(out_dir, "after.txt")
    shutil.copyfile(before, res.before)
    shutil.copyfile(after, res.after)
    res.status, res.reason = "ok", ""
    return res


def finish(res: OracleResult, start: float, dump: str, out_dir: str) -> None:
    """Time the compile, drop XLA's dump folder and record the result beside the kept dumps."""
    res.seconds = time.perf_counter() - start
    shutil.rmtree(dump, ignore_errors=True)
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump(res.to_json(), f, indent=1)


def run_oracle(program: Any, out_dir: str) -> OracleResult:
    """Compile ``program`` (a ``programs.Program``) with layout-assignment dumps."""
    import jax

    os.makedirs(out_dir, exist_ok=True)
    res = OracleResult("skipped", program=program.describe())
    start = time.perf_counter()
    dump = tempfile.mkdtemp(prefix="xla_dump_", dir=os.environ.get("DIFFERENTIAL_TMP"))
    try:
        try:
            ins, outs = program.formats()
        except Exception as e:  # a layout JAX refuses to build
            res.reason = f"format: {_short(e)}"
            return res
        try:
            lowered = jax.jit(program.fn, in_shardings=ins, out_shardings=outs, keep_unused=True,
                              donate_argnums=getattr(program, "donate", ())).lower(*program.args)
        except Exception as e:
            res.reason = f"lowering refused: {_short(e)[:160]}"
            return res
        from stablehlo_layout.xla.dumps import DUMP_FLAGS

        try:
            lowered.compile(compiler_options={"xla_dump_to": dump, **DUMP_FLAGS})
        except Exception as e:
            res.jax_error = _short(e)
            res.reason = _skip_reason(e)
        before, after = find_dumps(dump, program.name)
        if before is None or after is None:
            res.reason = res.reason or "no layout-assignment dumps"
            res.reason = f"no dumps ({res.reason})" if res.jax_error else res.reason
            return res
        return keep_dumps(res, before, after, out_dir)
    finally:
        finish(res, start, dump, out_dir)


def load_cached(out_dir: str) -> OracleResult | None:
    meta = os.path.join(out_dir, "meta.json")
    if not os.path.exists(meta):
        return None
    try:
        with open(meta) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return None
    res = OracleResult(d["status"], d.get("reason", ""), jax_error=d.get("jax_error", ""),
                       seconds=d.get("seconds", 0.0), program=d.get("program", {}))
    if res.status == "ok":
        res.before = os.path.join(out_dir, "before.txt")
        res.after = os.path.join(out_dir, "after.txt")
        if not (os.path.exists(res.before) and os.path.exists(res.after)):
            return None
    return res


def compile_on_device(fn: Any, args: list[Any], device: Any, dump_dir: str,
                      in_shardings: Any = None, out_shardings: Any = None) -> str:
    """Lower and compile ``fn`` for one (compile-only) ``device`` with layout-assignment dumps in
    ``dump_dir``: the deviceless oracles' one compile (XLA:GPU, XLA:TPU).

    Returns "" or the error XLA raised in a pass after layout assignment (the
    dumps are complete then); an error before that propagates.
    """
    import jax
    from jax.sharding import SingleDeviceSharding

    from stablehlo_layout.xla.dumps import DUMP_FLAGS

    s = SingleDeviceSharding(device)
    structs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s) for a in args]
    jitted = jax.jit(fn, in_shardings=in_shardings if in_shardings is not None else s,
                     out_shardings=out_shardings, keep_unused=True)
    lowered = jitted.lower(*structs)
    try:
        lowered.compile(compiler_options={"xla_dump_to": dump_dir, **DUMP_FLAGS})
    except Exception as e:
        return _short(e)
    return ""
