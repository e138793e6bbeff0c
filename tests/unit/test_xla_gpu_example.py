"""The XLA:GPU walkthrough (docs/cli.md, examples/xla_gpu_dump/): our copies are XLA:GPU's, per GPU."""

from __future__ import annotations

import os

import pytest

from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends.api import assign_module
from stablehlo_layout.xla.gpu_deviceless import added_copies

from tests.support import ROOT
from tests.support.command import environment, run_command

EXAMPLE = os.path.join(ROOT, "examples", "xla_gpu_dump")


def _dumps(gpu: str) -> tuple[str, str]:
    paths = [os.path.join(EXAMPLE, f"{gpu}.{k}_layout-assignment.txt") for k in ("before", "after")]
    texts = []
    for p in paths:
        with open(p) as f:
            texts.append(f.read())
    return paths[0], texts[0], texts[1]


@pytest.mark.parametrize("gpu,expected", [
    ("h100", [("f32[8,3,16,16]", (3, 2, 1, 0), (1, 3, 2, 0)), ("f32[16,3,3,3]", (3, 2, 1, 0), (1, 3, 2, 0)),
              ("f32[8,16,16,16]", (1, 3, 2, 0), (3, 2, 1, 0))]),
    ("a100", []),
])
def test_our_copies_are_xla_gpus(gpu, expected):
    path, before, after = _dumps(gpu)
    xla = sorted((c.shape, c.src, c.dst) for c in added_copies(before, after))
    assert xla == sorted(expected)
    r = assign_module(mlir.read_input(path, mlir.make_context()), "xla-gpu", "default", gpu=gpu)
    ours = sorted((r.report(c).shape, tuple(c.src), tuple(c.dst)) for c in r.copies)
    assert ours == xla


def test_explain_gives_the_cudnn_reason_on_h100():
    path = os.path.join(EXAMPLE, "h100.before_layout-assignment.txt")
    out = run_command("explain", "--target", "xla-gpu", "--gpu", "h100", path, env=environment(), check=True).stdout
    assert "cuDNN runs this f32 convBiasActivationForward as NHWC on h100" in out
    assert "summary: 3 copies, 153.7 KiB moved per execution" in out
