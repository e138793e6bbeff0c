"""Each installed XLA's own decisions: the version-keyed rules of targets/xla_version.py against the real XLA.

Every program here is compiled by the installed jaxlib's XLA:CPU with its
layout-assignment dumps; our ``xla-cpu`` target runs on the before dump and
must make the copies XLA's after dump holds, on whichever (Python, jax) pair
runs the suite.  The programs feed a loop from a reshape, the one place where
XLA 0.12 decides differently from 0.10.2 and 0.11.2 (docs/VERSIONS.md).
"""

from __future__ import annotations

import glob
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stablehlo_layout.targets.xla_version import installed_xla, loop_demands_first
from tests.support.command import QUIET, environment, run_command
from tests.support.tiers import one_fast

ENV = environment(QUIET)

_PRELUDE = """
import jax, jax.numpy as jnp
from jax import lax

def body(i, c):  # the loop carries [8,4,8] as {2,0,1}: a transpose of a row-major reduce-window
    t = jnp.transpose(c, (1, 0, 2))
    w = lax.reduce_window(t, 0.0, lax.add, (4, 1, 1), (1, 1, 1), ((3, 0), (0, 0), (0, 0)))
    return jnp.transpose(w * 0.5, (1, 0, 2))

def body_other(i, c):  # carries {0,1,2}
    w = lax.reduce_window(jnp.transpose(c, (2, 1, 0)), 0.0, lax.add, (4, 1, 1), (1, 1, 1), ((3, 0), (0, 0), (0, 0)))
    return jnp.transpose(w, (2, 1, 0))

x = jax.ShapeDtypeStruct((8, 4, 8, 3), jnp.float32)
y = jax.ShapeDtypeStruct((8, 4, 3), jnp.float32)
"""

# name -> (function body, the producer whose layout the loop may take)
PROGRAMS = {
    # JAX's dot_general of a vector per batch: XLA's DotDecomposer reshapes its result into the loop.
    "dot_reshape_into_loop": ("lax.fori_loop(0, 4, body, lax.dot_general(x, y, (((3,), (2,)), ((0, 1), (0, 1)))))",
                              "reshape"),
    "size1_reshape_into_loop": ("lax.fori_loop(0, 4, body, jnp.sin(x[..., 0:1]).reshape(8, 4, 8))", "reshape"),
    "merging_reshape_into_loop": (
        "lax.fori_loop(0, 4, body, jnp.sin(x[..., 0:2]).reshape(8, 4, 4, 4)[..., :2].reshape(8, 4, 8))", "reshape"),
    "reshape_into_loop_and_a_multiply": (
        "(lambda r: (lax.fori_loop(0, 4, body, r), r * 3.0))(jnp.sin(x[..., 0:1]).reshape(8, 4, 8))", "reshape"),
    "reshape_into_two_loops": (
        "(lambda r: (lax.fori_loop(0, 4, body, r), lax.fori_loop(0, 3, body_other, r)))"
        "(jnp.sin(x[..., 0:1]).reshape(8, 4, 8))", "reshape"),
    # A transpose derives its layout mandatorily: it keeps its bitcast layout on every version.
    "transpose_into_loop": (
        "lax.fori_loop(0, 4, body, jnp.transpose(jnp.sin(x[..., 0].reshape(8, 8, 4) + 1.0), (0, 2, 1)))",
        "transpose"),
}
# The program in the fast tier (a reshape into a loop: the version-keyed rule); the rest run with -m oracle.
FAST = {"dot_reshape_into_loop"}


def _dump(tmp: Path, name: str) -> tuple[str, str]:
    code, _ = PROGRAMS[name]
    src = _PRELUDE + f"jax.jit(lambda x, y: {code}).lower(x, y).compile()\n"
    env = {**ENV, "XLA_FLAGS": f"--xla_dump_to={tmp} --xla_dump_hlo_pass_re=layout-assignment"}
    subprocess.run([sys.executable, "-c", src], check=True, env=env, capture_output=True)
    (before,) = glob.glob(str(tmp / "*before_layout-assignment.txt"))
    (after,) = glob.glob(str(tmp / "*after_layout-assignment*.txt"))
    return before, Path(after).read_text()


def _entry(text: str) -> str:
    return text[text.index("\nENTRY"):]


def _loop_input_layout(after: str, opcode: str) -> str:
    """The layout XLA gave the last ``opcode`` instruction of the entry before the first loop."""
    entry = _entry(after)
    head = entry[:entry.index(" while(")]
    layouts = re.findall(r"= f32\[8,4,8\]\{([\d,]+)\} " + opcode + r"\(", head)
    assert layouts, head
    return layouts[-1]


@pytest.mark.parametrize("name", one_fast(sorted(PROGRAMS), FAST))
def test_copies_are_those_of_the_installed_xla(tmp_path: Path, name: str) -> None:
    before, after = _dump(tmp_path, name)
    out = run_command("explain", "--target", "xla-cpu", "--json", before)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    xla_copies = len(re.findall(r"= \S+ copy\(", after))
    assert report["summary"]["copies"] == xla_copies, (name, installed_xla())
    opcode = PROGRAMS[name][1]
    xla_layout = _loop_input_layout(after, opcode)
    # What the installed XLA does (docs/VERSIONS.md): on 0.12 a reshape into a loop takes the loop's layout.
    expected = "2,0,1" if (opcode == "reshape" and loop_demands_first()) else (
        "1,2,0" if opcode == "transpose" else "2,1,0")
    assert xla_layout == expected, (name, installed_xla(), xla_layout)
    ours_from = {c["from"]["minor_to_major"] for c in report["copies"]
                 if c["producer"]["op"] == f"stablehlo.{opcode}" and c["shape"] == "f32[8,4,8]"}
    assert ours_from <= {"{" + xla_layout + "}"}, (name, ours_from, xla_layout)


def test_the_rule_is_keyed_by_the_installed_jaxlib() -> None:
    import importlib.metadata

    assert installed_xla()[:2] == tuple(int(p) for p in importlib.metadata.version("jaxlib").split(".")[:2])
    assert loop_demands_first((0, 12, 0, 1)) and loop_demands_first((0, 13))
    assert not loop_demands_first((0, 11, 2)) and not loop_demands_first((0, 10, 2))
