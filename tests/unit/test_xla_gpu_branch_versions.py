"""A conditional's interface the caller lays out: each installed XLA:GPU's own answer.

``lax.cond`` over branches that leave their parameter and result free (a
cumsum, elementwise ops), with the layout decided outside: a pinned
column-major operand, a pinned column-major result, or a captured value
another consumer lays out.  Compiled deviceless by the installed jaxlib's
XLA:GPU (A100 config), the versions disagree (docs/VERSIONS.md item 5):

* XLA 0.10.2 lays the branches out first, row-major from their defaults,
  and copies where the caller's layout differs (inside each branch, or the
  conditional's result at the root);
* XLA 0.12 lets the caller decide: the branches take the pinned operand's
  layout, or the pinned result's (which the ``auto`` operand then follows
  too, also where one branch reads it only through its sum), with no copy;
  a captured value keeps the layout its other consumer gives it, the
  branches carry it through and the root copies the result, unless one
  branch (a matmul) lays its result out itself: then the other branch
  takes that result layout and copies its parameter.

Our ``xla-gpu`` target reproduces each: on 0.12 through
``branch_interface_from_caller`` (targets/xla_version.py; the engine's
``_free_branch_interface`` and ``_push_branch_interface_into_callees``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stablehlo_layout.targets.xla_version import installed_xla
from tests.differential.deviceless_child import compile_in_child
from tests.differential.gpu_oracle import oracle_available
from tests.support.tiers import one_fast

OK, WHY = oracle_available()
pytestmark = pytest.mark.skipif(not OK, reason=WHY)

NEW_BRANCHES = installed_xla() >= (0, 12)

_PROGRAM = """
def fn(x):
    return {body}

sharding = SingleDeviceSharding(gpu_device("a100")[0])
x = jax.ShapeDtypeStruct({shape}, jnp.float32, sharding=sharding)
lowered = jax.jit(fn, in_shardings=(layout_format({arg!r}, sharding, sharding),),
                  out_shardings={out}).lower(x)
"""

_CUMSUM = "lax.cond(jnp.sum(x) > 0, lambda x: jnp.cumsum(x, axis=1) * 0.5, lambda x: jnp.tanh(x), x)"
_SWAPPED = ("lax.cond(jnp.sum(x) > 0, lambda x: jnp.transpose(jnp.cumsum(jnp.transpose(x), axis=0)) * 0.5,"
            " lambda x: jnp.tanh(x), x)")
_COL = "layout_format([1, 0], sharding, sharding)"
_AUTO = "layout_format('auto', sharding, sharding)"
# The broadcast's result pinned {0,3,1,2}, the conditional's row-major.
_BROADCAST_AND_ROW = "(layout_format([2, 1, 3, 0], sharding, sharding), layout_format([0, 1, 2], sharding, sharding))"
CASES = {
    # The operand is pinned column-major, the result is free.
    "pinned_operand": ((4, 4), [1, 0], _AUTO, _SWAPPED),
    # As above, with a second branch that multiplies the operand by itself.
    "pinned_operand_matmul": ((4, 4), [1, 0], _AUTO,
                              _SWAPPED.replace("lambda x: jnp.tanh(x), x)", "lambda x: jnp.tanh(x @ x), x)")),
    # The operand is free, the result is pinned column-major.
    "pinned_result": ((4, 6), "auto", _COL, _CUMSUM),
    # As above, and the second branch reads the operand only through its sum.
    "pinned_result_one_reader": ((4, 6), "auto", _COL,
                                 "lax.cond(jnp.sum(x) > 0, lambda x: jnp.cumsum(x, axis=1) * 0.5,"
                                 " lambda x: jnp.tanh(jnp.sum(x)) * jnp.ones((4, 6)), x)"),
    # The operand is free; a broadcast of it is pinned {0,3,1,2}, the conditional's result row-major.
    "captured_elsewhere": ((8, 3, 3), "auto",
                           _BROADCAST_AND_ROW,
                           "(lax.broadcast_in_dim(x, (8, 4, 3, 3), (0, 2, 3)),"
                           " lax.cond(jnp.sum(x) > 0, lambda x: jnp.sin(x) * 1.1, lambda x: jnp.cumsum(x, axis=2), x))"),
    # As above, with a second branch whose matmul lays its own result out row-major.
    "captured_elsewhere_matmul": ((8, 3, 3), "auto",
                                  _BROADCAST_AND_ROW,
                                  "(lax.broadcast_in_dim(x, (8, 4, 3, 3), (0, 2, 3)),"
                                  " lax.cond(jnp.sum(x) > 0, lambda x: jnp.sin(x) * 1.1,"
                                  " lambda x: jnp.tanh(x.reshape(24, 3) @ jnp.full((3, 3), 0.5)).reshape(8, 3, 3), x))"),
}
# The case in the fast tier; the rest run with -m oracle.
FAST = {"pinned_operand"}


def _dumps(tmp: Path, case: str) -> str:
    shape, arg, out, body = CASES[case]
    before, after = compile_in_child(_PROGRAM.format(body=body, shape=shape, arg=arg, out=out), tmp)
    return after.read_text()


def _entry_param(after: str) -> str:
    entry = after[after.index("\nENTRY"):]
    return re.search(r"f32\[[\d,]+\]\{([\d,]+)\} parameter\(0\)", entry).group(1)  # type: ignore[union-attr]


def _branch_params(after: str) -> list[str]:
    """The layout of each branch's parameter (a one-element tuple in XLA's dumps)."""
    return re.findall(r"= \(f32\[[\d,]+\]\{([\d,]+)\}\) parameter\(0\)", after)


def _branch_param_names(after: str) -> list[str]:
    return re.findall(r"%([\w.\-]+) = \(f32\[[\d,]+\]\{[\d,]+\}\) parameter\(0\)", after)


def _copies(after: str) -> list[str]:
    return re.findall(r"= f32\[[\d,]+\]\{([\d,]+)\} copy\(", after)


@pytest.mark.parametrize("case", one_fast(sorted(CASES), FAST))
def test_the_installed_xla_gpu_lays_out_the_branches(tmp_path: Path, case: str) -> None:
    after = _dumps(tmp_path, case)
    params, copies = _branch_params(after), _copies(after)
    assert len(params) == 2, after
    if case.startswith("pinned_operand"):
        assert params == ["0,1", "0,1"], after  # the pinned operand, as each branch reads it
        if NEW_BRANCHES:
            assert copies == [], after  # the branches carry it through
        else:
            assert copies == ["1,0", "1,0"], after  # into each branch's row-major body
    elif case.startswith("pinned_result"):
        if NEW_BRANCHES:
            # The result's layout reaches the free operand, through both branches.
            assert _entry_param(after) == "0,1" and params == ["0,1", "0,1"] and copies == [], after
        else:
            assert _entry_param(after) == "1,0" and params == ["1,0", "1,0"] and copies == ["0,1"], after  # at the root
    else:
        if NEW_BRANCHES:
            # The broadcast lays the operand out and the branches read it so; the copy to the pinned
            # row-major result is at the root, or, where the matmul branch lays its result out
            # row-major, inside the other branch at its parameter.
            assert _entry_param(after) == "0,2,1" and params == ["0,2,1", "0,2,1"] and copies == ["2,1,0"], after
            source = re.search(r"\} copy\(%([\w.\-]+)#", after).group(1)  # type: ignore[union-attr]
            assert (source in _branch_param_names(after)) == case.endswith("_matmul"), after
        else:
            # The branches lay the operand out row-major; the broadcast's pin costs the copy.
            assert _entry_param(after) == "2,1,0" and params == ["2,1,0", "2,1,0"] and copies == ["0,2,1"], after


@pytest.mark.parametrize("case", one_fast(sorted(CASES), FAST))
def test_ours_lays_out_the_branches_as_the_installed_xla(tmp_path: Path, case: str) -> None:
    from tests.differential.compare import compare_dumps

    _dumps(tmp_path, case)
    result = compare_dumps(str(tmp_path / "before.txt"), str(tmp_path / "after.txt"), target="xla-gpu",
                           gpu="a100", unique_keys=True)
    assert result["status"] == "ok", result
    assert result["agree"] == result["values"], result
    assert result["our_copies"] == result["xla_copies"] == result["xla_copies_matched"], result
