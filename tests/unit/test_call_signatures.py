"""Real signatures: pytrees of parameters, keyword arguments and static arguments, from Python and the command.

The function is written as a user's training code is: a dict of parameters,
the batch, and keyword options, one of them a string only Python can use
(static), one an array passed by name.  From Python that is
``analyze(loss, params, x, kwargs=..., static_argnames=...)``; from the
command it is ``MODULE:FUNCTION --args-from MODULE:CALLABLE`` (a callable
that returns ``(args, kwargs)``) with ``--static-argnames``.  A call that
does not fit is one line naming the function and the reason, never a JAX
traceback.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.experimental.layout import Layout  # noqa: E402

from stablehlo_layout.frontends.jax import analyze  # noqa: E402
from stablehlo_layout.model.errors import InputError  # noqa: E402
from tests.support.command import run_command  # noqa: E402

COL = Layout((1, 0))

_MODEL = textwrap.dedent('''
    import jax
    import jax.numpy as jnp

    def loss(params, x, *, activation="tanh", scale=1.0):
        act = getattr(jax.nn, activation)
        h = act(x @ params["w1"] + params["b1"])
        return (h @ params["w2"]).sum() * scale

    def predict(x, depth, w):
        for _ in range(depth):
            x = jnp.tanh(x @ w)
        return x

    def example():
        params = {"w1": jax.ShapeDtypeStruct((64, 128), jnp.float32), "b1": jnp.zeros((128,)),
                  "w2": jax.ShapeDtypeStruct((128, 10), jnp.float32)}
        return (params, jnp.ones((8, 64))), {"activation": "relu", "scale": jnp.float32(2.0)}

    def predict_example():
        return (jnp.ones((4, 32)), 3, jnp.ones((32, 32))), {}

    def wrong_shapes():
        (params, x), kwargs = example()
        params["w2"] = jax.ShapeDtypeStruct((64, 10), jnp.float32)
        return (params, x), kwargs

    def too_few():
        (params, x), kwargs = example()
        return (params,), kwargs

    def not_a_pair():
        return [1, 2, 3]

    def fails():
        raise RuntimeError("no data here")
''')


def loss(params, x, *, activation="tanh", scale=1.0):
    h = getattr(jax.nn, activation)(x @ params["w1"] + params["b1"])
    return (h @ params["w2"]).sum() * scale


def _params():
    return {"w1": jax.ShapeDtypeStruct((64, 128), jnp.float32), "b1": jax.ShapeDtypeStruct((128,), jnp.float32),
            "w2": jax.ShapeDtypeStruct((128, 10), jnp.float32)}


X = jax.ShapeDtypeStruct((8, 64), jnp.float32)


def test_pytree_kwargs_and_a_static_argument_checked_against_xla():
    a = analyze(loss, _params(), X, kwargs={"activation": "relu", "scale": jnp.float32(2.0)},
                static_argnames="activation", in_layouts=[None, COL, None, None, Layout.AUTO], verify=True)
    # Flat order: params' leaves (b1, w1, w2: jax sorts a dict), x, then the keyword scale.
    assert [p.shape for p in a.params] == ["f32[128]", "f32[64,128]", "f32[128,10]", "f32[8,64]", "f32[]"]
    assert a.entry_params[1] == (0, 1)
    assert a.verified is True, a.mismatches
    # The static string chose the function: relu is a max, tanh would be a tanh.
    assert "maximum" in a.text and "tanh" not in a.text


def test_static_by_position_is_static_by_name_too():
    def predict(x, depth, w):
        for _ in range(depth):
            x = jnp.tanh(x @ w)
        return x

    w = jax.ShapeDtypeStruct((32, 32), jnp.float32)
    by_num = analyze(predict, jax.ShapeDtypeStruct((4, 32), jnp.float32), 3, w, static_argnums=1)
    by_name = analyze(predict, jax.ShapeDtypeStruct((4, 32), jnp.float32), 3, w, static_argnames="depth")
    assert [p.shape for p in by_num.params] == [p.shape for p in by_name.params] == ["f32[4,32]", "f32[32,32]"]
    assert by_num.text.count("stablehlo.tanh") == 3
    assert by_num.name == "predict"


def _one_line(info: pytest.ExceptionInfo, start: str) -> str:
    text = str(info.value)
    assert "\n" not in text and text.startswith(start), text
    return text


def test_bad_calls_from_python_are_one_line_naming_the_function():
    with pytest.raises(InputError) as info:
        analyze(loss, _params())
    assert "missing a required argument: 'x'" in _one_line(info, "loss: error: loss(params, x, *, ")
    with pytest.raises(InputError) as info:
        analyze(loss, _params(), X, kwargs={"activaton": "relu"})
    assert "unexpected keyword argument 'activaton'" in _one_line(info, "loss: error: ")
    params = {**_params(), "w2": jax.ShapeDtypeStruct((64, 10), jnp.float32)}
    with pytest.raises(InputError) as info:
        analyze(loss, params, X)
    text = _one_line(info, "loss: error: calling it with ({'w1': f32[64,128], 'b1': f32[128], 'w2': f32[64,10]}, "
                           "f32[8,64]) fails: TypeError: dot_general requires contracting dimensions")
    with pytest.raises(InputError) as info:
        analyze(loss, _params(), X, kwargs={"activation": "relu"})
    text = _one_line(info, "loss: error: argument activation is a str ('relu'), not an array")
    assert "static_argnames" in text
    with pytest.raises(InputError) as info:
        analyze(loss, {**_params(), "b1": "zeros"}, X)
    _one_line(info, "loss: error: argument params['b1'] is a str ('zeros'), not an array")
    with pytest.raises(InputError) as info:
        analyze(loss, _params(), X, static_argnums=4)
    _one_line(info, "loss: error: static_argnums: 4 is out of range")
    with pytest.raises(InputError) as info:
        analyze(loss, _params(), X, static_argnames="activaton")
    _one_line(info, "loss: error: static_argnames: loss(params, x, *, activation='tanh', scale=1.0) has no parameter")


# --- the command ------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("user-code")
    (folder / "mymodel.py").write_text(_MODEL)
    return folder


def test_args_from_with_static_argnames_as_compiled(model_dir: Path):
    p = run_command("explain", "--json", "--no-fixes", "--as-compiled", "--target", "xla-cpu", "mymodel:loss",
                    "--args-from", "mymodel:example", "--static-argnames", "activation", cwd=model_dir)
    assert p.returncode == 0, p.stderr
    import json

    doc = json.loads(p.stdout)
    # params' three leaves, x and the keyword scale; activation was closed over.
    assert [q["layout"] for q in doc["summary"]["parameters"]] == ["{0}", "{1,0}", "{1,0}", "{1,0}", "{}"]
    assert doc["compiled_by"] == "XLA:CPU"


def test_args_from_with_static_argnums(model_dir: Path):
    p = run_command("assign", "--target", "xla-cpu", "mymodel:predict", "--args-from", "mymodel:predict_example",
                    "--static-argnums", "1", cwd=model_dir)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("stablehlo.tanh") == 3
    main = next(line for line in p.stdout.splitlines() if "func.func public @main" in line)
    assert main.count("tensor<") == 3  # x and w in, the result out: depth is no parameter


@pytest.mark.parametrize("options,message", [
    (["--args-from", "mymodel:example"],
     "mymodel:loss: error: argument activation is a str ('relu'), not an array: pass an array or "
     "jax.ShapeDtypeStruct, or make it static (static_argnums / static_argnames)"),
    (["--args-from", "mymodel:wrong_shapes", "--static-argnames", "activation"],
     "mymodel:loss: error: calling it with ({'w1': f32[64,128], 'b1': f32[128], 'w2': f32[64,10]}, f32[8,64], "
     "activation='relu', scale=f32[]) fails: TypeError: dot_general requires contracting dimensions to have the "
     "same shape, got (128,) and (64,)."),
    (["--args-from", "mymodel:too_few", "--static-argnames", "activation"],
     "mymodel:loss: error: mymodel:loss(params, x, *, activation='tanh', scale=1.0) cannot be called with these "
     "arguments: missing a required argument: 'x'"),
    (["--args-from", "mymodel:not_a_pair"],
     "mymodel:not_a_pair: error: --args-from must return (args, kwargs): a tuple or list of positional arguments "
     "and a dict of keyword arguments, got a list"),
    (["--args-from", "mymodel:fails"],
     "mymodel:fails: error: --args-from: calling it failed: RuntimeError: no data here"),
    (["--args-from", "mymodel:example", "--static-argnums", "x"],
     "mymodel:loss: error: --static-argnums: 'x' is not an index; give comma-separated integers such as 1,2"),
    (["--arg", "f32[8,64]", "--static-argnums", "1"],
     "mymodel:loss: error: --static-argnums and --static-argnames need --args-from: an --arg is always an array"),
    (["--arg", "f32[8,64]", "--args-from", "mymodel:example"],
     "mymodel:loss: error: give either --arg shapes or --args-from, not both"),
])
def test_bad_calls_from_the_command_are_one_line(model_dir: Path, options: list[str], message: str):
    p = run_command("explain", "--target", "xla-cpu", "mymodel:loss", *options, cwd=model_dir)
    assert p.returncode == 1
    assert p.stderr == message + "\n"
    assert p.stdout == ""


def test_args_from_on_a_file_input_is_refused(model_dir: Path):
    (model_dir / "m.mlir").write_text("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }\n")
    p = run_command("assign", "m.mlir", "--args-from", "mymodel:example", cwd=model_dir)
    assert p.returncode == 1
    assert p.stderr == "m.mlir: error: --args-from is only for MODULE:FUNCTION inputs such as examples.models:mlp\n"
