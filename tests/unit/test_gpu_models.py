"""GPU models: XLA's GpuTargetConfigProto text configs, ``--gpu``, ``gpu=``.

The shipped configs are XLA's own (``xla/backends/gpu/target_config/specs``);
the oracle check proves jaxlib's XLA:GPU accepts each of them as a target.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends.api import assign_module
from stablehlo_layout.model.errors import InputError, OptionError, PassError
from stablehlo_layout.passes import LayoutAssignmentPass, build_pipeline
from stablehlo_layout.targets import XlaGpuTarget, get_target, load_gpu, shipped_gpus
from stablehlo_layout.targets.gpu_config import model_from_text, parse_text_proto
from stablehlo_layout.xla.gpu_deviceless import plugin_available

from tests.support import ROOT
from tests.support.command import environment, run_command

# A small f32 convolution: NHWC on Hopper and later, NCHW before (XLA's
# HeuristicLayoutAssignment keys on the compute capability).
CONV = """\
func.func public @main(%x: tensor<1x16x32x32xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x32x32xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x16x32x32xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x32x32xf32>
  return %0 : tensor<1x32x32x32xf32>
}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)
NHWC, NCHW = (1, 3, 2, 0), (3, 2, 1, 0)


def conv_layout(result) -> tuple[int, ...]:
    conv = next(i for i in result.graph.instrs if i.op == "stablehlo.convolution")
    return result.assignment.layouts[conv.results[0]]


def run_conv(**kw):
    ctx = mlir.make_context()
    return assign_module(mlir.load(CONV.encode(), "conv.mlir", ctx), "xla-gpu", **kw)


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """The command in ``cwd``, bytes out, the checkout first on its path."""
    return run_command(*args, cwd=cwd, env=environment({"PYTHONPATH": str(ROOT)}), text=False, timeout=120)


def test_shipped_models_read_their_device():
    assert shipped_gpus() == ["a100", "b200", "h100", "h200", "v100"]
    seen = {n: (m.platform, m.compute_capability, m.dnn_version, m.description)
            for n in shipped_gpus() for m in [load_gpu(n)]}
    assert seen == {
        "a100": ("cuda", (8, 0), (8, 9, 4), "NVIDIA A100-SXM4-80GB"),
        "b200": ("cuda", (10, 0), (9, 7, 0), "NVIDIA B200"),
        "h100": ("cuda", (9, 0), (8, 9, 4), "NVIDIA H100 80GB HBM3"),
        "h200": ("cuda", (9, 0), (9, 10, 0), "NVIDIA H200 141GB HBM3e"),
        "v100": ("cuda", (7, 0), (9, 10, 0), "Tesla V100-SXM2-16GB"),
    }
    assert load_gpu(None).name == "h100"  # the default
    assert XlaGpuTarget().gpu.name == "h100"


@pytest.mark.oracle
@pytest.mark.skipif(not plugin_available(),
                    reason="the XLA:GPU oracle (jax-cuda12-plugin==0.10.2, jax-cuda12-pjrt==0.10.2) is not installed")
def test_shipped_configs_are_accepted_by_xla_gpu():
    code = (
        "import sys\n"
        "from jax.experimental import topologies\n"
        "for path in sys.argv[1:]:\n"
        "    t = topologies.get_topology_desc(platform='cuda', target_config=open(path).read(), topology='1x1x1')\n"
        "    print(t.devices[0].device_kind)\n")
    paths = [str(ROOT / "stablehlo_layout" / "targets" / "gpus" / f"{n}.txtpb") for n in shipped_gpus()]
    p = subprocess.run([sys.executable, "-c", code, *paths], capture_output=True, timeout=300,
                       env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    assert p.stdout.decode().split("\n")[:5] == [load_gpu(n).description for n in shipped_gpus()]


def test_conv_layout_follows_the_gpu():
    assert conv_layout(run_conv()) == NHWC  # h100
    assert conv_layout(run_conv(gpu="h200")) == NHWC
    assert conv_layout(run_conv(gpu="b200")) == NHWC
    assert conv_layout(run_conv(gpu="a100")) == NCHW
    assert conv_layout(run_conv(gpu="v100")) == NCHW
    assert conv_layout(run_conv(gpu=str(ROOT / "stablehlo_layout/targets/gpus/a100.txtpb"))) == NCHW


def test_a_config_file_of_our_own(tmp_path):
    cfg = tmp_path / "sm75.txtpb"
    cfg.write_text("# a Turing card\ngpu_device_info {\n  cuda_compute_capability { major: 7 minor: 5 }\n"
                   "  core_count: 40\n  some_future_field { x: 1 }\n}\nplatform_name: 'CUDA'\n"
                   "dnn_version_info <major: 9, minor: 1>\n")
    m = load_gpu(str(cfg))
    assert (m.compute_capability, m.dnn_version, m.platform) == ((7, 5), (9, 1, 0), "cuda")


@pytest.mark.parametrize("text, line, reason", [
    ("gpu_device_info {\n  cuda_compute_capability { major: 9 }\n", 3, "missing '}' before the end of the file"),
    ("gpu_device_info {\n  core_count 3\n}\n", 2, "expected ':' or '{' after field 'core_count'"),
    ("gpu_device_info {\n  cuda_compute_capability { major: 9 }\n  cuda_compute_capability { major: 8 }\n}\n",
     3, "cuda_compute_capability is given more than once"),
    ("gpu_device_info {\n  cuda_compute_capability { major: \"9\" }\n}\n", 2, "major must be an integer"),
    ("gpu_device_info {\n  core_count: 3\n}\n", 1, "no cuda_compute_capability or rocm_compute_capability"),
    ("gpu_device_info {\n  cuda_compute_capability { major: 9 }\n}\nplatform_name: \"ROCM\"\n", 4,
     "does not match the CUDA compute capability"),
    ("gpu_device_info {\n  cuda_compute_capability { major: 9 } $\n}\n", 2, "unexpected character '$'"),
])
def test_bad_config_is_one_error_with_its_line(text, line, reason):
    with pytest.raises(InputError) as e:
        model_from_text(text, "my.txtpb", "my")
    assert e.value.path == "my.txtpb" and e.value.line == line
    assert reason in e.value.reason
    assert str(e.value).startswith(f"my.txtpb:{line}: error: ")


def test_not_a_config():
    with pytest.raises(InputError, match="no gpu_device_info message"):
        model_from_text("platform_name: 'CUDA'\n", "x.txtpb", "x")
    assert parse_text_proto("a: 1 b: -2.5e3 c: 'x' \"y\" d: ENUM e { }", "t")["c"][0].value == "xy"


def test_unknown_name_and_wrong_target():
    with pytest.raises(OptionError, match="unknown GPU 'h900'"):
        load_gpu("h900")
    with pytest.raises(OptionError, match="applies only to --target xla-gpu"):
        get_target("xla-cpu", "a100")
    with pytest.raises(PassError, match="gpu= goes with a target name"):
        run_conv_target = XlaGpuTarget("a100")
        ctx = mlir.make_context()
        assign_module(mlir.load(CONV.encode(), "c.mlir", ctx), run_conv_target, gpu="h100")


def test_pipeline_option():
    assert LayoutAssignmentPass(target="xla-gpu", gpu="a100").gpu == "a100"
    with pytest.raises(OptionError, match="unknown GPU"):
        LayoutAssignmentPass(target="xla-gpu", gpu="nope")
    for gpu, want in (("a100", NCHW), ("h100", NHWC)):
        ctx = mlir.make_context()
        module = mlir.load(CONV.encode(), "conv.mlir", ctx)
        build_pipeline(f"stablehlo-layout-assignment{{target=xla-gpu gpu={gpu}}}", ctx).run(module.operation)
        text = str(module)
        shape = "f32[1,32,32,32]{" + ",".join(map(str, want)) + "}"
        assert f'xla_shape = "{shape}"' in text, text


def test_cli_gpu_flag(tmp_path):
    src = tmp_path / "conv.mlir"
    src.write_text(CONV)
    for gpu, want in (("a100", NCHW), ("h100", NHWC), (None, NHWC)):
        args = ["assign", "--target", "xla-gpu", *(["--gpu", gpu] if gpu else []), str(src)]
        p = cli(*args)
        assert p.returncode == 0, p.stderr.decode()
        assert "f32[1,32,32,32]{" + ",".join(map(str, want)) + "}" in p.stdout.decode()
    for command in ("explain", "trace"):
        p = cli(command, "--target", "xla-gpu", "--gpu", "a100", str(src))
        assert p.returncode == 0, p.stderr.decode()


@pytest.mark.parametrize("args, message", [
    (["--target", "xla-gpu", "--gpu", "h900"], "stablehlo-layout: error: --gpu: unknown GPU 'h900' "),
    (["--gpu", "a100"], "stablehlo-layout: error: --gpu a100: a GPU model applies only to --target xla-gpu"),
    (["--target", "xla-cpu", "--gpu", "h100"], "stablehlo-layout: error: --gpu h100: a GPU model applies only"),
    (["--target", "xla-gpu", "--gpu", "missing/x.txtpb"], "missing/x.txtpb: error: no such file"),
    (["--target", "xla-gpu", "--gpu", "bad.txtpb"], "bad.txtpb:2: error: expected ':' or '{' after field 'x'"),
])
def test_cli_bad_gpu_is_one_line(tmp_path, args, message):
    (tmp_path / "conv.mlir").write_text(CONV)
    (tmp_path / "bad.txtpb").write_text("gpu_device_info {\n  x 3\n}\n")
    p = cli("assign", *args, "conv.mlir", cwd=tmp_path)
    err = p.stderr.decode()
    assert p.returncode == 1 and p.stdout == b"", err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(message), err


def test_jax_front_door_takes_gpu():
    import jax
    import jax.numpy as jnp

    from stablehlo_layout.frontends.jax import analyze

    def f(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))

    x = jnp.zeros((1, 16, 8, 8), jnp.float32)
    w = jnp.zeros((32, 16, 3, 3), jnp.float32)
    ours = {gpu: analyze(f, x, w, target="xla-gpu", gpu=gpu, as_compiled=False, fixes=False) for gpu in ("a100", "h100")}
    assert not ours["a100"].copies  # NCHW: the logical order
    assert ours["h100"].copies  # NHWC: the pinned NCHW parameters are copied
