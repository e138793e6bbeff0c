// RUN: stablehlo-layout assign --target generic %s | FileCheck %s

// slice, pad, concatenate, dynamic_slice, dynamic_update_slice and reverse
// cannot change layout (XLA §4): every same-rank operand must have the
// output's layout.  A mismatched operand is fixed by a copy on that edge (LAT
// "CopySlice/CopyDSlice/CopyConcat...", "PropagatingLayoutFromResultToOperand").
// Scalar operands (pad value, dynamic indices) are unaffected.  iota and
// constant can change layout and simply take the layout their users ask for
// (constants get their literal re-laid-out, never a copy, XLA §13.16).
//
// slice / pad / dynamic_slice / reverse: each operand is pinned {0,1}, the
//   result is pinned to the default {1,0}.  The soft result demand sets the
//   op's output to {1,0} first (the result constraint is added after the
//   parameters and so propagates first, XLA §3.1); the output forces its operand
//   to {1,0} (mandatory, XLA §3.2), and the pinned parameter cannot follow: one
//   copy of the parameter to {1,0} per op.
// concatenate (dim 0) of %arg3 (6x4, pinned {0,1}) and %arg4 (2x4, default),
//   consumed by a reduce so that no result demand reaches it: %arg4 propagates
//   first, but only the operand that is largest along the concat dimension
//   propagates to its siblings and the output (XLA §3.3 step 7).  %arg3 (size 6)
//   then forces operand 1 and the output to {0,1}, mandatory, replacing the
//   earlier non-mandatory echo: one copy of the small operand %arg4 to {0,1}.
// dynamic_update_slice of %arg8 (8x6, pinned {0,1}) with update %arg9 (2x3,
//   default), consumed by a reduce: %arg9 propagates first, but a
//   non-mandatory demand on operand >= 1 of a DUS is downgraded (BFS, priority
//   - 1, XLA §2.8) so that operand 0 decides.  %arg8's demand then forces the
//   update and the output to {0,1} (mandatory, replacing the queued,
//   downgraded constraint in place): one copy of the update %arg9 to {0,1}.
// iota and a constant returned with result layout {0,1} take {0,1}: no copy.

// CHECK-LABEL: func.func public @main(
// CHECK-DAG:     %[[CA:.+]] = mhlo.copy %arg0 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[8,6]{1,0}"}
// CHECK-DAG:     %[[CB:.+]] = mhlo.copy %arg1 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,4]{1,0}"}
// CHECK-DAG:     %[[CS:.+]] = mhlo.copy %arg4 {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[2,4]{0,1}"}
// CHECK-DAG:     %[[CD:.+]] = mhlo.copy %arg5 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[8,6]{1,0}"}
// CHECK-DAG:     %[[CU:.+]] = mhlo.copy %arg9 {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[2,3]{0,1}"}
// CHECK-DAG:     %[[CR:.+]] = mhlo.copy %arg10 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,6]{1,0}"}
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.slice %[[CA]]
// CHECK-SAME:      xla_shape = "f32[4,4]{1,0}"
// CHECK:         stablehlo.pad %[[CB]], %arg2
// CHECK-SAME:      xla_shape = "f32[6,7]{1,0}"
// CHECK:         %[[CAT:.+]] = stablehlo.concatenate %arg3, %[[CS]], dim = 0
// CHECK-SAME:      xla_shape = "f32[8,4]{0,1}"
// CHECK:         stablehlo.reduce(%[[CAT]] init:
// CHECK:         stablehlo.dynamic_slice %[[CD]], %arg6, %arg7
// CHECK-SAME:      xla_shape = "f32[4,4]{1,0}"
// CHECK:         %[[DUS:.+]] = stablehlo.dynamic_update_slice %arg8, %[[CU]], %arg6, %arg7
// CHECK-SAME:      xla_shape = "f32[8,6]{0,1}"
// CHECK:         stablehlo.reduce(%[[DUS]] init:
// CHECK:         stablehlo.reverse %[[CR]], dims = [0]
// CHECK-SAME:      xla_shape = "f32[4,6]{1,0}"
// CHECK:         stablehlo.iota dim = 1
// CHECK-SAME:      result_layout = dense<[0, 1]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "s32[4,6]{0,1}"
// CHECK:         stablehlo.constant
// CHECK-SAME:      result_layout = dense<[0, 1]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[2,3]{0,1}"
// CHECK-NOT:     mhlo.copy
// CHECK:         return
func.func public @main(%a: tensor<8x6xf32> {mhlo.layout_mode = "{0,1}"},
                       %b: tensor<4x4xf32> {mhlo.layout_mode = "{0,1}"}, %pv: tensor<f32>,
                       %big: tensor<6x4xf32> {mhlo.layout_mode = "{0,1}"}, %small: tensor<2x4xf32>,
                       %d: tensor<8x6xf32> {mhlo.layout_mode = "{0,1}"}, %i: tensor<i32>, %j: tensor<i32>,
                       %op0: tensor<8x6xf32> {mhlo.layout_mode = "{0,1}"}, %upd: tensor<2x3xf32>,
                       %rv: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"})
    -> (tensor<4x4xf32>, tensor<6x7xf32>, tensor<8xf32>, tensor<4x4xf32>, tensor<8xf32>,
        tensor<4x6xf32>, tensor<4x6xi32> {mhlo.layout_mode = "{0,1}"},
        tensor<2x3xf32> {mhlo.layout_mode = "{0,1}"}) {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = stablehlo.slice %a [0:4, 1:5] : (tensor<8x6xf32>) -> tensor<4x4xf32>
  %1 = stablehlo.pad %b, %pv, low = [1, 0], high = [1, 3], interior = [0, 0]
      : (tensor<4x4xf32>, tensor<f32>) -> tensor<6x7xf32>
  %cat = stablehlo.concatenate %big, %small, dim = 0 : (tensor<6x4xf32>, tensor<2x4xf32>) -> tensor<8x4xf32>
  %2 = stablehlo.reduce(%cat init: %ninf) applies stablehlo.maximum across dimensions = [1]
      : (tensor<8x4xf32>, tensor<f32>) -> tensor<8xf32>
  %3 = stablehlo.dynamic_slice %d, %i, %j, sizes = [4, 4] : (tensor<8x6xf32>, tensor<i32>, tensor<i32>) -> tensor<4x4xf32>
  %dus = stablehlo.dynamic_update_slice %op0, %upd, %i, %j
      : (tensor<8x6xf32>, tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<8x6xf32>
  %4 = stablehlo.reduce(%dus init: %ninf) applies stablehlo.maximum across dimensions = [1]
      : (tensor<8x6xf32>, tensor<f32>) -> tensor<8xf32>
  %5 = stablehlo.reverse %rv, dims = [0] : tensor<4x6xf32>
  %6 = stablehlo.iota dim = 1 : tensor<4x6xi32>
  %7 = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7
      : tensor<4x4xf32>, tensor<6x7xf32>, tensor<8xf32>, tensor<4x4xf32>, tensor<8xf32>,
        tensor<4x6xf32>, tensor<4x6xi32>, tensor<2x3xf32>
}
