"""Where XLA:GPU lays out a loop's state when the loop's result is pinned: each installed XLA's own answer.

A ``fori_loop`` whose body transposes, takes a cumsum (a reduce-window) and
transposes back is returned with a pinned column-major result (``{0,1}``)
from a row-major parameter.  Compiled deviceless by the installed jaxlib's
XLA:GPU (A100 config), the two versions disagree (docs/VERSIONS.md item 5):

* XLA 0.10.2 keeps the loop state row-major (the entry parameter's layout);
  with every result pinned it copies the loop's result to ``{0,1}`` at the
  root, and with one result left ``auto`` it gives up the pinned layout
  altogether (the entry result becomes ``{1,0}``, no copy);
* XLA 0.12 lays the loop state out ``{0,1}``, the layout the result wants,
  copies the entry parameter into the loop and needs no root copy, whether
  or not another result is ``auto``.

Our ``xla-gpu`` target reproduces each: on 0.12 through
``loop_state_from_caller`` (targets/xla_version.py).  Two more programs pin
the rule's edges: a body whose FFT reads the carried value row-major keeps
deciding on 0.12 too (a copy at the root), and a body of elementwise ops
alone takes the pinned result's layout.
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
# The case in the fast tier (the version-keyed one); the rest run with -m oracle.
FAST = {"second_result_auto"}

_PROGRAM = """
def body(i, c):
    return {body}

sharding = SingleDeviceSharding(gpu_device("a100")[0])
outs = tuple(layout_format(o, sharding, sharding) for o in {outs})
x = jax.ShapeDtypeStruct((6, 5), jnp.float32, sharding=sharding)
lowered = jax.jit(lambda x: (lax.fori_loop(0, 3, body, x), jnp.sum(x, 0)), out_shardings=outs).lower(x)
"""

_CUMSUM = "jnp.transpose(jnp.cumsum(jnp.transpose(c), axis=0))"
# major_to_minor (1, 0) is XLA's {0,1}; the second result is pinned or left to XLA.
CASES = {
    "all_results_pinned": (_CUMSUM, "([1, 0], [0])"),
    "second_result_auto": (_CUMSUM, "([1, 0], 'auto')"),
    "elementwise_body": ("jnp.sin(c) * 2.0", "([1, 0], [0])"),
    # cuFFT reads its operand row-major: the body constrains the carried value.
    "fft_body": ("jnp.real(jnp.fft.fft(c.astype(jnp.complex64), axis=1))", "([1, 0], [0])"),
}


def _dumps(tmp: Path, case: str) -> tuple[str, str]:
    body, outs = CASES[case]
    src = _PROGRAM.replace("{body}", body).replace("{outs}", outs)
    before, after = compile_in_child(src, tmp)
    return str(before), after.read_text()


def _body_state_layout(after: str) -> str:
    (layout,) = re.findall(r"%arg_tuple\.1 = \(s32\[\], f32\[6,5\]\{([\d,]+)\}\) parameter\(0\)", after)
    return layout


def _entry_result_layout(after: str) -> str:
    header = after.splitlines()[0]
    return re.search(r"->\(f32\[6,5\]\{([\d,]+)\}", header).group(1)  # type: ignore[union-attr]


@pytest.mark.parametrize("case", one_fast(sorted(CASES), FAST))
def test_the_installed_xla_gpu_lays_out_the_loop_state(tmp_path: Path, case: str) -> None:
    _, after = _dumps(tmp_path, case)
    copies = re.findall(r"= f32\[6,5\]\{([\d,]+)\} copy\(", after)
    entry = after[after.index("\nENTRY"):]
    copy_before_loop = " copy(" in entry and entry.index(" copy(") < entry.index(" while(")
    if case == "fft_body":  # the body decides on every version: a copy of the loop's result at the root
        assert _body_state_layout(after) == "1,0", after
        assert copies == ["0,1"] and not copy_before_loop, after
    elif NEW_LOOPS:
        assert _body_state_layout(after) == "0,1", after
        assert _entry_result_layout(after) == "0,1"
        assert copies == ["0,1"] and copy_before_loop, after  # the entry parameter, into the loop
    else:
        assert _body_state_layout(after) == "1,0", after
        if case == "second_result_auto":
            assert _entry_result_layout(after) == "1,0"  # the pinned layout given up
            assert copies == []
        else:
            assert _entry_result_layout(after) == "0,1"
            assert copies == ["0,1"] and not copy_before_loop, after  # the loop's result, at the root


@pytest.mark.parametrize("case", one_fast(sorted(CASES), FAST))
def test_ours_lays_out_the_loop_state_as_the_installed_xla(tmp_path: Path, case: str) -> None:
    from tests.differential.compare import compare_dumps

    before, _ = _dumps(tmp_path, case)
    result = compare_dumps(before, str(tmp_path / "after.txt"), target="xla-gpu", gpu="a100", unique_keys=True)
    assert result["status"] == "ok", result
    assert result["agree"] == result["values"], result
    assert result["our_copies"] == result["xla_copies"] == result["xla_copies_matched"], result



def test_the_rule_is_keyed_by_the_installed_jaxlib() -> None:
    from stablehlo_layout.targets.xla_gpu import XlaGpuTarget
    from stablehlo_layout.targets.xla_version import loop_state_from_caller

    assert loop_state_from_caller((0, 12, 0, 1)) and loop_state_from_caller((0, 13))
    assert not loop_state_from_caller((0, 11, 2)) and not loop_state_from_caller((0, 10, 2))
    assert XlaGpuTarget().loop_state_from_caller == NEW_LOOPS
