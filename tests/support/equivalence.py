"""Execute StableHLO on CPU through jaxlib and compare two modules bit for bit.

The layout pass must not change what a module computes. We prove it by compiling the
original and the rewritten module with XLA's CPU backend, feeding both the same inputs
and comparing every output byte (see DESIGN §9).

The pitfall this module exists for (DESIGN §9.2): the rewritten
module carries ``mhlo.layout_mode = "{0,1}"`` on @main's arguments and results, so its
executable may expect column-major parameter buffers. ``LoadedExecutable.execute()`` does
NOT relayout or even check its inputs: a row-major buffer handed to a ``{0,1}`` parameter
runs happily and returns silently wrong numbers. So every input is placed in exactly the
layout ``exe.get_parameter_layouts()`` reports. Outputs are ``jax.Array``s that know their
own layout, and ``np.asarray`` returns their logical (row-major) values.

Note: ``mhlo.xla_entry_computation_*`` module attributes are ignored by PJRT; only
``mhlo.layout_mode`` decides the executable's entry layouts.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import ml_dtypes
import numpy as np
from jax._src import compiler, xla_bridge
from jax._src.interpreters import mlir as jax_mlir
from jax._src.layout import Format, Layout
from jax._src.lib import xla_client as xc
from jax.sharding import SingleDeviceSharding
from jaxlib.mlir import ir

__all__ = [
    "ArgType",
    "assert_bit_identical",
    "compile_cpu",
    "main_arg_types",
    "make_inputs",
    "run",
]

# (shape, dtype) of one @main argument.
ArgType = tuple[tuple[int, ...], np.dtype]

# MLIR element type spelling -> NumPy dtype.
_DTYPES: dict[str, np.dtype] = {
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "ui8": np.dtype(np.uint8),
    "ui16": np.dtype(np.uint16),
    "ui32": np.dtype(np.uint32),
    "ui64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "complex<f32>": np.dtype(np.complex64),
    "complex<f64>": np.dtype(np.complex128),
}


def _cpu() -> tuple[xc.Client, xc.Device]:
    backend = xla_bridge.get_backend("cpu")
    return backend, backend.local_devices()[0]


def _ready_lapack() -> None:
    # JAX registers its LAPACK FFI targets and fills their BLAS pointers only
    # when it lowers a linalg op itself; a module compiled from text that calls
    # lapack_*_ffi would otherwise crash the process when it runs.
    from jax._src.lax import linalg

    linalg.initialize_lapack()


def compile_cpu(module_text: str) -> xc.LoadedExecutable:
    """Compile a StableHLO module (text) for the first CPU device."""
    backend, dev = _cpu()
    _ready_lapack()
    # No argument_layouts in the options: if they were set, PJRT would ignore
    # mhlo.layout_mode on @main (DESIGN §9.2) and we would not test the module as written.
    options = compiler.get_compile_options(num_replicas=1, num_partitions=1)
    return backend.compile_and_load(module_text, xc.DeviceList((dev,)), options)


def main_arg_types(module_text: str) -> list[ArgType]:
    """Shapes and dtypes of @main's arguments, read from the function type."""
    with jax_mlir.make_ir_context():  # knows stablehlo, mhlo (mhlo.copy), chlo, ...
        module = ir.Module.parse(module_text)
        for op in module.body.operations:
            if op.operation.name != "func.func":
                continue
            if ir.StringAttr(op.attributes["sym_name"]).value != "main":
                continue
            fn_type = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            result: list[ArgType] = []
            for i, t in enumerate(fn_type.inputs):
                # These bindings auto-downcast types; there is no `.isinstance` any more.
                if not isinstance(t, ir.RankedTensorType):
                    raise ValueError(f"@main argument {i}: unsupported type {t}")
                rt = t
                if not rt.has_static_shape:
                    raise ValueError(f"@main argument {i}: dynamic shape {t}")
                elem = str(rt.element_type)
                if elem not in _DTYPES:
                    raise ValueError(f"@main argument {i}: unsupported element type {elem}")
                result.append((tuple(rt.shape), _DTYPES[elem]))
            return result
    raise ValueError("module has no func.func @main")


def make_inputs(module_text: str, seed: int) -> list[np.ndarray]:
    """Deterministic random inputs for @main, one per argument."""
    rng = np.random.default_rng(seed)
    inputs: list[np.ndarray] = []
    for shape, dtype in main_arg_types(module_text):
        if dtype == np.bool_:
            x = rng.random(shape) < 0.5
        elif np.issubdtype(dtype, np.complexfloating):
            x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        elif np.issubdtype(dtype, np.unsignedinteger):
            x = rng.integers(0, 10, shape)
        elif np.issubdtype(dtype, np.signedinteger):
            x = rng.integers(-5, 6, shape)
        else:  # f16/bf16/f32/f64 (bf16 is not a NumPy "floating" subtype)
            x = rng.standard_normal(shape)
        inputs.append(np.asarray(x).astype(dtype))
    return inputs


def run(module_text: str, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Compile, place inputs in the executable's layouts, execute, return logical arrays."""
    _, dev = _cpu()
    exe = compile_cpu(module_text)
    layouts = exe.get_parameter_layouts()
    if len(layouts) != len(inputs):
        raise ValueError(f"executable takes {len(layouts)} inputs, got {len(inputs)}")
    sharding = SingleDeviceSharding(dev)
    # THE pitfall: execute() does no relayout, so each buffer must already be in the
    # parameter's layout. device_put with a concrete Format transposes on the host side.
    args = [
        jax.device_put(np.asarray(x), Format(Layout.from_pjrt_layout(pl), sharding))
        for x, pl in zip(inputs, layouts)
    ]
    outs = exe.execute(args)
    # The output arrays carry their (possibly non-default) layout; np.array reads the
    # logical values and copies, so nothing aliases device memory.
    return [np.array(o) for o in outs]


def _bits(x: np.ndarray) -> np.ndarray:
    """One row of raw bytes per element: NaNs and signed zeros compare by bits."""
    flat = np.ascontiguousarray(x).reshape(-1)
    return flat.view(np.uint8).reshape(flat.size, x.dtype.itemsize)


def assert_bit_identical(original_text: str, rewritten_text: str, seed: int = 0) -> None:
    """Run both modules on the same random inputs and require byte-equal outputs."""
    orig_args = main_arg_types(original_text)
    new_args = main_arg_types(rewritten_text)
    assert orig_args == new_args, f"@main argument types differ: {orig_args} vs {new_args}"
    inputs = make_inputs(original_text, seed)
    expected = run(original_text, inputs)
    actual = run(rewritten_text, inputs)
    assert len(expected) == len(actual), (
        f"output count differs: original {len(expected)}, rewritten {len(actual)}"
    )
    for i, (e, a) in enumerate(zip(expected, actual)):
        assert e.dtype == a.dtype, f"output {i}: dtype {e.dtype} vs {a.dtype}"
        assert e.shape == a.shape, f"output {i}: shape {e.shape} vs {a.shape}"
        differ = int(np.any(_bits(e) != _bits(a), axis=1).sum())
        assert differ == 0, (
            f"output {i} ({e.dtype}{list(e.shape)}): {differ} of {e.size} elements differ "
            f"bitwise (seed={seed})"
        )
