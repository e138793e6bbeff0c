"""Loop state the caller lays out from the initial value: each installed XLA:GPU's own answer.

The loop's entry parameter is pinned column-major (``{0,1}``) and every
result is left ``auto``.  Compiled deviceless by the installed jaxlib's
XLA:GPU (A100 config), the versions disagree (docs/VERSIONS.md item 5):

* XLA 0.10.2 lays the loop out row-major, from its body's defaults, and
  copies the parameter into it;
* XLA 0.12 carries the parameter's ``{0,1}`` through the loop (no copy):
  nothing asked for the loop's result, so it takes its initial value's
  layout.  The layout flows on to what reads the result (a second loop
  over ``2 * result``), and a stack the body fills from the carried value
  (``lax.scan``'s stacked outputs, zeros to begin with) is laid out by the
  body around it (``{1,0,2}``) instead of by its zeros.

Our ``xla-gpu`` target reproduces each: on 0.12 through
``loop_state_from_caller`` (targets/xla_version.py; the engine's
``_loop_state_from_initial_values`` and ``_push_loop_state_into_callees``).
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

NEW_LOOPS = installed_xla() >= (0, 12)

_PROGRAM = """
def fn(c):
    return {body}

sharding = SingleDeviceSharding(gpu_device("a100")[0])
x = jax.ShapeDtypeStruct((6, 5), jnp.float32, sharding=sharding)
lowered = jax.jit(fn, in_shardings=(layout_format([1, 0], sharding, sharding),),
                  out_shardings=layout_format("auto", sharding, sharding)).lower(x)
"""

_SIN = "lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * 2.0, c)"
CASES = {
    "elementwise_body": _SIN,
    # A body that transposes, takes a cumsum (a reduce-window) and transposes back.
    "cumsum_body": "lax.fori_loop(0, 3, lambda i, c: jnp.transpose(jnp.cumsum(jnp.transpose(c), axis=0)), c)",
    # The first loop's result, doubled, is the second loop's initial value.
    "two_loops": f"lax.fori_loop(0, 2, lambda i, c: jnp.cos(c), {_SIN} * 2.0)",
    # lax.scan stacks the carried value into a [3,6,5] output that starts as zeros.
    "scan_stack": "lax.scan(lambda c, _: (jnp.sin(c) * 2.0, c), c, None, length=3)",
}
# The case in the fast tier; the rest run with -m oracle.
FAST = {"elementwise_body"}


def _dumps(tmp: Path, case: str) -> str:
    src = _PROGRAM.replace("{body}", CASES[case])
    before, after = compile_in_child(src, tmp)
    return after.read_text()


def _loop_layouts(after: str) -> list[list[str]]:
    """Per while of the entry, in order: the layouts of its carried arrays."""
    entry = after[after.index("\nENTRY"):]
    return [re.findall(r"f32\[[\d,]+\]\{([\d,]+)\}", m.group(1))
            for m in re.finditer(r"= \((s32\[\][^)]*)\) while\(", entry)]


@pytest.mark.parametrize("case", one_fast(sorted(CASES), FAST))
def test_the_installed_xla_gpu_carries_the_pinned_parameter(tmp_path: Path, case: str) -> None:
    after = _dumps(tmp_path, case)
    loops = _loop_layouts(after)
    assert len(loops) == (2 if case == "two_loops" else 1), after
    copies = re.findall(r"= f32\[[\d,]+\]\{[\d,]+\} copy\(", after)
    if NEW_LOOPS:
        for carried in loops:
            assert carried[0] == "0,1", after  # the parameter's layout, through every loop
        if case == "scan_stack":
            assert loops[0][1] == "1,0,2", after  # the stack follows the carried value, not its zeros
        assert copies == [], after
    else:
        for carried in loops:
            assert carried[0] == "1,0", after  # the body's row-major defaults
        assert len(copies) == 1, after  # the parameter, into the first loop


@pytest.mark.parametrize("case", one_fast(sorted(CASES), FAST))
def test_ours_carries_the_pinned_parameter_as_the_installed_xla(tmp_path: Path, case: str) -> None:
    from tests.differential.compare import compare_dumps

    _dumps(tmp_path, case)
    result = compare_dumps(str(tmp_path / "before.txt"), str(tmp_path / "after.txt"), target="xla-gpu",
                           gpu="a100", unique_keys=True)
    assert result["status"] == "ok", result
    assert result["agree"] == result["values"], result
    assert result["our_copies"] == result["xla_copies"] == result["xla_copies_matched"], result
