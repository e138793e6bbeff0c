"""A user's own XLA dump, with no flags: the target comes from the dump, the wrong file is refused.

Every dump here is a real one: XLA:CPU (and XLA:GPU deviceless, where its
compiler is installed) compiling a small training step with
``--xla_dump_to`` and ``--xla_dump_hlo_pass_re=layout-assignment``, the files
named and laid out as XLA writes them.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stablehlo_layout.xla.dump_files import PASS_FLAG

ROOT = Path(__file__).resolve().parents[2]
TOOL = [sys.executable, "-m", "stablehlo_layout.frontends.cli"]
ENV = {**os.environ, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"}

# A convnet step as users write it: NCHW convolutions, a dense head, its gradient.
_PROGRAM = """
import sys
import jax, jax.numpy as jnp
def loss(w, k, x):
    y = jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
    y = jax.nn.relu(y).reshape(x.shape[0], -1)
    return jnp.sum(jnp.tanh(y @ w) ** 2)
step = jax.jit(jax.grad(loss, argnums=(0, 1)))
args = (jnp.ones((8 * 16 * 16, 10)), jnp.ones((8, 3, 3, 3)), jnp.ones((4, 3, 16, 16)))
flags = {"xla_dump_to": sys.argv[1], "xla_dump_hlo_pass_re": "layout-assignment"}
if len(sys.argv) > 2:  # XLA:GPU, deviceless, for a shipped GPU's config
    from jax.sharding import SingleDeviceSharding
    from stablehlo_layout.xla.gpu_deviceless import deviceless_device
    device = deviceless_device(open(sys.argv[2]).read())
    args = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=SingleDeviceSharding(device)) for a in args]
    step.lower(*args).compile(compiler_options=flags)
else:
    step.lower(*args).compile(compiler_options=flags)
"""


def _tool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*TOOL, *args], capture_output=True, text=True, env=ENV, cwd=cwd)


def _dump(folder: Path, *gpu_config: str) -> Path:
    subprocess.run([sys.executable, "-c", _PROGRAM, str(folder), *gpu_config], check=True, env=ENV,
                   capture_output=True)
    return folder


@pytest.fixture(scope="module")
def cpu_dump(tmp_path_factory) -> Path:
    return _dump(tmp_path_factory.mktemp("cpu-dump"))


@pytest.fixture(scope="module")
def gpu_dump(tmp_path_factory) -> Path:
    from stablehlo_layout.xla.gpu_deviceless import plugin_available, plugin_version_mismatch

    if not plugin_available() or plugin_version_mismatch():
        pytest.skip("XLA:GPU's compiler (the gpu-oracle extra) of the installed jax is not installed")
    config = ROOT / "stablehlo_layout" / "targets" / "gpus" / "a100.txtpb"
    return _dump(tmp_path_factory.mktemp("gpu-dump"), str(config))


def _one(folder: Path, pattern: str) -> Path:
    found = [p for p in glob.glob(str(folder / pattern)) if "jit_loss" in p or "grad" in p]
    assert len(found) == 1, found
    return Path(found[0])


def _xla_copies(folder: Path) -> int:
    after = _one(folder, "*after_layout-assignment*.txt")
    return len(re.findall(r"= \S+ copy\(", after.read_text()))


def test_a_cpu_dump_folder_gives_xla_cpus_answer_with_no_flags(cpu_dump: Path) -> None:
    plain = _tool("explain", "--json", str(cpu_dump))
    flagged = _tool("explain", "--json", "--target", "xla-cpu", str(cpu_dump))
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == flagged.stdout
    note, = [line for line in plain.stderr.splitlines() if line.startswith("note: XLA:CPU dump")]
    assert "HLO_passes_through_layout_assignment" in note and "--target xla-cpu" in note
    assert "XLA:CPU dump" not in flagged.stderr  # a flag decides without a word
    # The training step's module: our copies are XLA's.
    before = _one(cpu_dump, "*before_layout-assignment.txt")
    report = json.loads(_tool("explain", "--json", str(before)).stdout)
    assert report["summary"]["copies"] == _xla_copies(cpu_dump) > 0


def test_a_gpu_dump_folder_names_its_gpu(gpu_dump: Path) -> None:
    plain = _tool("explain", "--json", str(gpu_dump))
    flagged = _tool("explain", "--json", "--target", "xla-gpu", "--gpu", "a100", str(gpu_dump))
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == flagged.stdout
    assert "note: XLA:GPU dump" in plain.stderr and "--gpu a100" in plain.stderr
    assert "gpu_target_config.pbtxt" in plain.stderr


def test_one_file_of_the_dump_is_known_by_its_name_and_its_neighbours(cpu_dump: Path, tmp_path: Path) -> None:
    before = _one(cpu_dump, "*before_layout-assignment.txt")
    assert "--target xla-cpu" in _tool("assign", str(before)).stderr
    # Renamed alone into an empty folder nothing tells: one line naming the flags, no answer.
    alone = tmp_path / "module.txt"
    shutil.copy(before, alone)
    out = _tool("assign", str(alone))
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "--target xla-cpu" in out.stderr and "Traceback" not in out.stderr
    assert _tool("assign", "--target", "xla-cpu", str(alone)).returncode == 0


@pytest.mark.parametrize("kind", ["before_optimizations.txt", "cpu_after_optimizations.txt",
                                  "cpu_after_optimizations-buffer-assignment.txt", "debug_options"])
def test_a_dump_file_that_is_not_layout_assignments_input_is_refused(cpu_dump: Path, kind: str) -> None:
    wrong = _one(cpu_dump, f"*.{kind}")
    before = _one(cpu_dump, "*before_layout-assignment.txt")
    for flags in ([], ["--target", "xla-cpu"]):
        out = _tool("explain", *flags, str(wrong))
        assert out.returncode == 1 and out.stdout == ""
        line, = out.stderr.splitlines()
        assert line.startswith(f"{wrong}: error: is ") and str(before) in line


def test_a_dump_folder_without_layout_assignments_input_names_the_flag(cpu_dump: Path, tmp_path: Path) -> None:
    for path in cpu_dump.iterdir():
        if "before_layout-assignment" not in path.name and "after_layout-assignment" not in path.name:
            shutil.copy(path, tmp_path / path.name)
    out = _tool("explain", str(tmp_path))
    assert out.returncode == 1 and out.stdout == ""
    line, = out.stderr.splitlines()
    assert PASS_FLAG in line and "--xla_dump_to" in line


def test_stablehlo_names_no_backend_and_gets_generic() -> None:
    example = ROOT / "examples" / "pinned_transpose.mlir"
    plain, generic = _tool("explain", str(example)), _tool("explain", "--target", "generic", str(example))
    assert plain.returncode == 0 and plain.stdout == generic.stdout and plain.stderr == generic.stderr


def _tpu_dump(folder: Path, generation: str, program: str = "transposes", with_arguments: bool = True) -> Path:
    """A committed XLA:TPU dump laid out under the names libtpu gave it (meta.json keeps them)."""
    src = ROOT / "tests" / "unit" / "xla_tpu_dumps" / generation / program
    names = json.loads((src / "meta.json").read_text())["dump_names"]
    prefix = f"module_0001.jit_{program}."
    before = folder / (prefix + names["before"])
    shutil.copy(src / "before.txt", before)
    if with_arguments:
        shutil.copy(src / "target_arguments.txt", folder / (prefix + "target_arguments.txt"))
    return before


def test_an_xla_tpu_dump_is_laid_out_for_the_generation_it_names(tmp_path: Path) -> None:
    for generation in ("v4", "v5e", "v6e"):
        folder = tmp_path / generation
        folder.mkdir()
        before = _tpu_dump(folder, generation)
        out = _tool("assign", str(before))
        assert out.returncode == 0, out.stderr
        note, = out.stderr.splitlines()
        assert note.startswith("note: XLA:TPU dump (its file name's pass pipeline, Layout_assignment; its "
                               "generation from ") and note.endswith(f"laid out as --target xla-tpu --tpu {generation} "
                                                                     "(give --target to choose another)"), note
        assert out.stdout == _tool("assign", "--target", "xla-tpu", "--tpu", generation, str(before)).stdout
        # XLA:TPU's tiles, as its AFTER dump prints them.
        assert 'xla_shape = "f32[256,384]{0,1:T(8,128)}"' in out.stdout


def test_an_xla_tpu_dump_that_names_no_generation_says_which_it_assumed(tmp_path: Path) -> None:
    before = _tpu_dump(tmp_path, "v4", with_arguments=False)
    out = _tool("explain", str(before))
    assert out.returncode == 0, out.stderr
    note, = out.stderr.splitlines()
    assert "--target xla-tpu --tpu v5e (no file beside it names the generation; give --tpu to name it)" in note


def test_a_tpu_generation_we_do_not_model_is_one_line() -> None:
    before = ROOT / "tests" / "unit" / "xla_tpu_dumps" / "v5e" / "transposes" / "before.txt"
    out = _tool("assign", "--target", "xla-tpu", "--tpu", "v9", str(before))
    assert out.returncode == 1 and out.stdout == ""
    line, = out.stderr.splitlines()
    assert "--tpu v9: unknown TPU generation" in line and "v5e" in line
    out = _tool("assign", "--target", "xla-cpu", "--tpu", "v4", str(before))
    assert out.returncode == 1 and "applies only to --target xla-tpu" in out.stderr


def test_explain_on_a_dump_names_the_users_source_lines() -> None:
    """An XLA dump's metadata (op_name, stack frames) reaches the report, as --as-compiled's does."""
    before = ROOT / "examples" / "xla_dump" / "before_layout-assignment.txt"
    out = _tool("explain", "--target", "xla-cpu", str(before))
    assert out.returncode == 0, out.stderr
    # The dump names the file where it was made (absolute); shown relative to where the tool runs.
    assert re.search(r"consumer: operand 1 of stablehlo.dot_general at dot \(jit\(f\)/transpose at "
                     r"\S*examples/xla_dump/make\.py:\d+\)", out.stdout), out.stdout[:600]
    assert "producer: parameter 0 of @main (x)" in out.stdout
    doc = json.loads(_tool("explain", "--json", "--target", "xla-cpu", str(before)).stdout)
    # The dot's demand (its op_name jit(f)/transpose), whichever of the copy's consumers it is listed as.
    source, = (c["source"] for c in doc["copies"][0]["consumers"] if c["source"]["op_name"] == "jit(f)/transpose")
    assert source["file"].endswith("examples/xla_dump/make.py")
    assert source["function"] == "f" and isinstance(source["line"], int)
