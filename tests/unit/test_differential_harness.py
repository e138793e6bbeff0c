"""The differential harness's shared parts: drawing steps, building programs, one result, the JSON.

The CPU (``run.py``) and GPU (``gpu_run.py``) harnesses and generators
(``programs.py``, ``gpu_programs.py``) share these; what each adds is tested
with its slice.
"""

from __future__ import annotations

import json
import random

import pytest

pytest.importorskip("jax")

from tests.differential import gpu_programs, programs  # noqa: E402
from tests.differential.oracle import OracleResult  # noqa: E402
from tests.differential.run import chosen_models, compare_one, write_results  # noqa: E402


def test_drawing_gives_up_when_no_step_can_be_built():
    def never(b: programs._Builder) -> None:
        raise programs._Retry()

    rng = random.Random(0)
    assert programs.draw_steps(rng, programs._Builder, {"never": never}, {}, lambda: 2) is None


def test_drawing_replays_the_same_steps_for_the_same_stream():
    def draw(seed: int) -> list[str]:
        rng = random.Random(seed)
        b = programs.draw_steps(rng, programs._Builder, programs.STEP_KINDS, programs.WEIGHTS, lambda: 3)
        assert b is not None
        return list(b.names)

    assert draw(7) == draw(7)
    assert 1 <= len(draw(7)) <= 3


def test_a_program_replays_its_steps_and_is_named_for_its_generator():
    cpu, gpu = programs.generate(0, 3), gpu_programs.generate(0, 3)
    assert cpu.fn.__name__ == cpu.name and gpu.fn.__name__ == f"gpu_{gpu.name}"
    for p in (cpu, gpu):
        assert len(p.in_layouts) == len(p.args)
        out = p.fn(*[__import__("jax").numpy.ones(a.shape, a.dtype) for a in p.args])
        n_out = 1 if p.single_output else len(out)
        assert len(p.out_layouts) == n_out


def test_one_result_keeps_the_ids_first_and_never_raises(tmp_path):
    base = {"seed": 0, "index": 1, "id": "s0/1"}

    def no_folder() -> str:
        raise FileNotFoundError("no GPU config named 'x'")

    r = compare_one(dict(base), no_folder, False, lambda: None, lambda p, d: None, lambda res: {})
    assert list(r)[:3] == ["seed", "index", "id"]
    assert r["status"] == "harness-error" and "no GPU config named 'x'" in r["error"]

    built = []

    def oracle(program, d):
        built.append((program, d))
        return OracleResult("skipped", "lowering refused: no", program={"name": "p"})

    r = compare_one(dict(base), lambda: str(tmp_path), False, lambda: "program", oracle, lambda res: {})
    assert built == [("program", str(tmp_path))]
    assert r == {**base, "cached": False, "program": {"name": "p"}, "jax_error": "", "oracle_seconds": 0.0,
                 "status": "skipped", "reason": "lowering refused: no"}


def test_unknown_models_are_named_with_the_known_ones():
    names, why = chosen_models("linen_mlp,no_such_model")
    if why.startswith(("flax", "dm-haiku", "equinox", "optax")):
        pytest.skip(why)
    assert names == [] and why.startswith("unknown model(s) no_such_model; known: linen_mlp, ")
    assert chosen_models("linen_mlp") == (["linen_mlp"], "")


def test_results_are_written_as_json_and_their_place_said(tmp_path, capsys):
    path = tmp_path / "deep" / "r.json"
    write_results({"a100/models": [{"id": "models/x", "status": "ok"}]}, str(path))
    assert json.loads(path.read_text()) == {"a100/models": [{"id": "models/x", "status": "ok"}]}
    assert capsys.readouterr().out == f"\nper-program results: {path}\n"
