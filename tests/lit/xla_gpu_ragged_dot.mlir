// RUN: stablehlo-layout assign --target xla-gpu --entry-layouts free %s | FileCheck %s

// Rule (XLA §11.2, target:gpu-ragged-dot): a ragged dot reads both
// matrix operands and writes its result in the default layout, mandatory.
// The lhs parameter is pinned {0,1,2}, so it is copied to {2,1,0}; the free
// rhs simply takes the default (the generic rules would leave the ragged dot
// reading {0,1,2}).  The function is not @main: XLA:CPU cannot run a
// ragged dot, so the semantics check (tests/unit/test_lit_semantics.py)
// skips this file.
// CHECK-LABEL: func.func public @ragged_dot
// CHECK-SAME:    %arg1: tensor<3x19x5x7xf32> {mhlo.layout_mode = "{3,2,1,0}", stablehlo_layout.chosen}
// CHECK:         %[[A:.+]] = mhlo.copy %arg0
// CHECK-SAME:      xla_shape = "f32[19,11,5]{2,1,0}"
// CHECK:         "chlo.ragged_dot"(%[[A]], %arg1, %arg2)
// CHECK-SAME:      xla_shape = "f32[19,11,7]{2,1,0}"
func.func public @ragged_dot(%lhs: tensor<19x11x5xf32> {mhlo.layout_mode = "{0,1,2}"}, %rhs: tensor<3x19x5x7xf32>, %gs: tensor<3xi64>) -> tensor<19x11x7xf32> {
  %0 = "chlo.ragged_dot"(%lhs, %rhs, %gs) {
    ragged_dot_dimension_numbers = #chlo.ragged_dot<
      lhs_batching_dimensions = [0], rhs_batching_dimensions = [1],
      lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [2],
      lhs_ragged_dimensions = [1], rhs_group_dimensions = [0]>,
    precision_config = [#chlo<precision DEFAULT>, #chlo<precision DEFAULT>]
  } : (tensor<19x11x5xf32>, tensor<3x19x5x7xf32>, tensor<3xi64>) -> tensor<19x11x7xf32>
  return %0 : tensor<19x11x7xf32>
}
