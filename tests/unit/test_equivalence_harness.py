"""The equivalence harness must be able to fail, and must handle non-default layouts."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from tests.support.equivalence import (
    assert_bit_identical,
    compile_cpu,
    main_arg_types,
    make_inputs,
    run,
)

ADD = """
func.func public @main(%arg0: tensor<3x4xf32>, %arg1: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = stablehlo.add %arg0, %arg1 : tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
"""

SUB = ADD.replace("stablehlo.add", "stablehlo.subtract")

TRANSPOSE = """
func.func public @main(%arg0: tensor<3x4xf32>{ATTR}) -> tensor<4x3xf32> {
  %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %1 = stablehlo.negate %0 : tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}
"""
TRANSPOSE_PLAIN = TRANSPOSE.replace("{ATTR}", "")
TRANSPOSE_COL_MAJOR = TRANSPOSE.replace("{ATTR}", ' {mhlo.layout_mode = "{0,1}"}')

COPY_PLAIN = """
func.func public @main(%arg0: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = stablehlo.exponential %arg0 : tensor<3x4xf32>
  %2 = stablehlo.negate %0 : tensor<3x4xf32>
  return %2 : tensor<3x4xf32>
}
"""

# What the rewrite emits: a copy with layout attrs, entry layout_mode, module attributes.
COPY_REWRITTEN = """
module attributes {mhlo.xla_entry_computation_parameter_layouts = [dense<[1, 0]> : tensor<2xindex>], mhlo.xla_entry_computation_result_layout = [dense<[1, 0]> : tensor<2xindex>]} {
  func.func public @main(%arg0: tensor<3x4xf32> {mhlo.layout_mode = "{1,0}"}) -> (tensor<3x4xf32> {mhlo.layout_mode = "{1,0}"}) {
    %0 = stablehlo.exponential %arg0 {result_layout = dense<[1, 0]> : tensor<2xindex>, xla_shape = "f32[3,4]{1,0}"} : tensor<3x4xf32>
    %1 = mhlo.copy %0 {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[3,4]{0,1}"} : tensor<3x4xf32>
    %2 = stablehlo.negate %1 {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[3,4]{0,1}"} : tensor<3x4xf32>
    return %2 : tensor<3x4xf32>
  }
}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)

TWO_RESULTS = """
func.func public @main(%arg0: tensor<3x4xf32>, %arg1: tensor<4xi32>) -> (tensor<4x3xf32>{R0}, tensor<4xi32>) {
  %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %1 = stablehlo.multiply %arg1, %arg1 : tensor<4xi32>
  return %0, %1 : tensor<4x3xf32>, tensor<4xi32>
}
"""
TWO_RESULTS_PLAIN = TWO_RESULTS.replace("{R0}", "")
TWO_RESULTS_COL_MAJOR = TWO_RESULTS.replace("{R0}", ' {mhlo.layout_mode = "{0,1}"}')


def test_identical_modules_pass() -> None:
    assert_bit_identical(ADD, ADD, seed=1)


def test_different_computation_fails() -> None:
    with pytest.raises(AssertionError, match=r"output 0 .*: 12 of 12 elements differ"):
        assert_bit_identical(ADD, SUB)


def test_inputs_are_deterministic_and_typed() -> None:
    text = """
    func.func @main(%a: tensor<2x3xbf16>, %b: tensor<i1>, %c: tensor<5xcomplex<f32>>, %d: tensor<4xui8>) -> tensor<i1> {
      return %b : tensor<i1>
    }
    """
    a = make_inputs(text, seed=7)
    b = make_inputs(text, seed=7)
    assert [(x.shape, x.dtype) for x in a] == main_arg_types(text)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[2], make_inputs(text, seed=8)[2])


def test_column_major_argument_is_placed_correctly() -> None:
    exe = compile_cpu(TRANSPOSE_COL_MAJOR)
    assert str(exe.get_parameter_layouts()[0]) == "{0,1}"  # the layout really is non-default
    (x,) = make_inputs(TRANSPOSE_COL_MAJOR, seed=0)
    (out,) = run(TRANSPOSE_COL_MAJOR, [x])
    np.testing.assert_array_equal(out, -x.T)
    assert_bit_identical(TRANSPOSE_PLAIN, TRANSPOSE_COL_MAJOR)


def test_unplaced_argument_gives_wrong_values() -> None:
    """Why the harness places inputs: execute() silently misreads a row-major buffer."""
    exe = compile_cpu(TRANSPOSE_COL_MAJOR)
    (x,) = make_inputs(TRANSPOSE_COL_MAJOR, seed=0)
    row_major = jax.device_put(x, exe.local_devices()[0])
    (out,) = exe.execute([row_major])
    assert not np.array_equal(np.asarray(out), -x.T)


def test_rewritten_copy_module_runs() -> None:
    (x,) = make_inputs(COPY_REWRITTEN, seed=3)
    (out,) = run(COPY_REWRITTEN, [x])
    np.testing.assert_array_equal(out, run(COPY_PLAIN, [x])[0])
    assert_bit_identical(COPY_PLAIN, COPY_REWRITTEN, seed=3)


def test_two_results_with_column_major_result() -> None:
    exe = compile_cpu(TWO_RESULTS_COL_MAJOR)
    assert [str(pl) for pl in exe.get_output_layouts()] == ["{0,1}", "{0}"]
    x, y = make_inputs(TWO_RESULTS_COL_MAJOR, seed=2)
    t, sq = run(TWO_RESULTS_COL_MAJOR, [x, y])
    np.testing.assert_array_equal(t, x.T)
    np.testing.assert_array_equal(sq, y * y)
    assert_bit_identical(TWO_RESULTS_PLAIN, TWO_RESULTS_COL_MAJOR, seed=2)


def test_nan_bits_and_signed_zero_are_compared() -> None:
    """-0.0 == 0.0 numerically, but bitwise they differ: the harness must notice."""
    neg = """
    func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
      %z = stablehlo.constant dense<0.0> : tensor<4xf32>
      %0 = stablehlo.multiply %arg0, %z : tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    """
    zero = """
    func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
      %0 = stablehlo.constant dense<0.0> : tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    """
    # x * 0.0 is -0.0 for negative x; seed 0 gives some negative inputs.
    (x,) = make_inputs(neg, seed=0)
    assert (x < 0).any()
    with pytest.raises(AssertionError, match="elements differ"):
        assert_bit_identical(zero, neg)
