"""How well explain names the collectives' mesh axes, and whether --as-compiled's N-device compile is jax's.

    python -m tests.differential.sharded_axes [--seed 0] [--count 27]

For each sharded program of ``sharded_programs.py`` (XLA:CPU, 8 host devices:
this process re-executes itself with ``--xla_force_host_platform_device_count=8``):

- **the compile**: the program's StableHLO (``jax.jit(...).lower(...).as_text()``)
  compiled by ``pipeline.compile_module`` (what ``--as-compiled`` and
  ``analyze`` run) against ``lowered.compile()`` (what jax runs, the sharded
  oracle's compile): the same entry layouts and the same copies in XLA's
  after-layout-assignment module;
- **the axes**: every collective of XLA's partitioned module, described as
  ``explain`` does with the program's mesh carried over: named (a set of
  mesh axes), and, for the ``shard_map`` kinds whose collectives the program
  writes over a known axis, named right; and every named single axis agrees
  with its size-and-stride description (the dump's wording, computed apart).

Prints one line per program and a total; exit status 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter
from typing import Any

DEVICES = 8


def expected_axes(kind: str, names: tuple[str, ...]) -> set[tuple[str, ...]] | None:
    """The axes a shard_map program's own collectives run over; None for jit programs (XLA chooses)."""
    last = names[-1]
    return {"megatron_attention": {(last,)}, "sequence_parallel": {(last,)}, "fsdp": {tuple(names)},
            "all_to_all_attention": {(last,)}, "ring_matmul": {(last,)}}.get(kind)


def _copies(after: str) -> Counter[str]:
    """XLA's copies by shape and layouts (names differ between two compiles of one program)."""
    return Counter(m.group(1) for m in re.finditer(r"= (\S+) copy\(", after))


def _header(text: str) -> str:
    m = re.search(r"entry_computation_layout=\{(.*?)\}(?:, |\n)", text)
    return m.group(1) if m else ""


def measure(seed: int, index: int) -> dict[str, Any]:
    import jax

    from stablehlo_layout.frontends.api import analyze
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.ir.entry_modes import entry_function
    from stablehlo_layout.ir.sharding import adopt_program_sharding, program_sharding
    from stablehlo_layout.model.mesh import unnamed_axis
    from stablehlo_layout.report.collectives import COLLECTIVES, describe
    from stablehlo_layout.xla.dumps import run_to_layout_assignment
    from stablehlo_layout.xla.pipeline import compile_module

    from .sharded_programs import generate

    prog = generate(seed, index)
    out: dict[str, Any] = {"name": prog.name, "kind": prog.kind, "mesh": prog.mesh_shape}
    try:
        lowered = prog.lower(jax.devices()[:DEVICES])
    except Exception as e:  # jax refused the program (as the oracle skips it)
        out["skipped"] = str(e).splitlines()[0][:100]
        return out
    theirs = run_to_layout_assignment(lambda flags: lowered.compile(compiler_options=flags))
    ctx = mlir.make_context()
    module = mlir.load(lowered.as_text().encode(), prog.name, ctx)
    ours = compile_module(module, prog.name, "xla-cpu")
    out["same_compile"] = (theirs.after is not None and ours.after is not None
                           and _copies(theirs.after) == _copies(ours.after)
                           and _header(theirs.after) == _header(ours.after))
    laid = mlir.load(ours.before, prog.name, ctx, hlo_sources=True)
    g, _, _ = analyze(laid, "xla-cpu", consume=True)
    adopt_program_sharding(g, program_sharding(module, entry_function(module)))
    want = expected_axes(prog.kind, prog.axis_names)
    sizes = dict(zip(prog.axis_names, prog.mesh_shape))
    total = named = right = consistent = checked = 0
    unnamed: list[str] = []
    for iid in range(len(g.instrs)):
        ins = g.instrs[iid]
        if ins.op.split(".", 1)[-1] not in COLLECTIVES:
            continue
        c = describe(g, iid, "consumer")
        assert c is not None
        total += 1
        if c.mesh_axes is None:
            unnamed.append(f"{c.op} {c.devices}")
            continue
        named += 1
        right += want is None or c.mesh_axes in want
        groups = ins.attrs.get("replica_groups")
        if len(c.mesh_axes) == 1 and groups:
            axis = c.mesh_axes[0]
            minor = prog.axis_names[prog.axis_names.index(axis) + 1:]
            stride = 1
            for a in minor:
                stride *= sizes[a]
            checked += 1
            consistent += unnamed_axis(groups) == f"{sizes[axis]} devices, stride {stride}"
    out.update(collectives=total, named=named, right=right, checked=checked, consistent=consistent,
               judged=want is not None, unnamed=unnamed)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=27)
    a = ap.parse_args(argv)
    flag = f"--xla_force_host_platform_device_count={DEVICES}"
    if flag not in os.environ.get("XLA_FLAGS", ""):
        env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip(),
               "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"}
        os.execve(sys.executable, [sys.executable, "-m", "tests.differential.sharded_axes", *(argv or sys.argv[1:])],
                  env)
    sums = Counter()
    for i in range(a.count):
        r = measure(a.seed, i)
        if "skipped" in r:
            print(f"{r['name']:16s} {r['kind']:22s} skipped: {r['skipped']}")
            sums["skipped"] += 1
            continue
        print(f"{r['name']:16s} {r['kind']:22s} mesh {r['mesh']!s:7s} same compile {r['same_compile']!s:5s} "
              f"collectives {r['collectives']:2d} named {r['named']:2d}"
              + (f" right {r['right']:2d}" if r["judged"] else "") + f" stride-consistent {r['consistent']}/{r['checked']}")
        for u in r["unnamed"]:
            print(f"    not named: {u}")
        sums["programs"] += 1
        sums["same_compile"] += r["same_compile"]
        for k in ("collectives", "named", "checked", "consistent"):
            sums[k] += r[k]
        if r["judged"]:
            sums["judged"] += r["named"]
            sums["right"] += r["right"]
    print(f"seed {a.seed}: {sums['programs']} programs ({sums['skipped']} skipped), same compile as jax's: "
          f"{sums['same_compile']}/{sums['programs']}; collectives {sums['collectives']}, named "
          f"{sums['named']}, right {sums['right']}/{sums['judged']} (shard_map kinds), stride-consistent "
          f"{sums['consistent']}/{sums['checked']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
