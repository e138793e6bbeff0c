// RUN: stablehlo-layout assign --target generic %s | FileCheck %s

// CHLO ops are elementwise unless known otherwise (DESIGN §8): they take the
// "cannot change layout" rule of XLA's elementwise opcodes (XLA §4), so
// same-rank operands and the output share one layout, and operands of lower
// rank (the rank-1 side of an explicit broadcast) are left alone (XLA §4,
// "Different-rank operands are unaffected"; rank <= 1 never propagates, XLA §13.1).
// All results are "auto".
//
// chlo.erf of %arg0 (pinned {0,1}) -> {0,1}; chlo.broadcast_add of that with
// the rank-1 %arg1 along dim 1 -> {0,1}, no copy for the rank-1 operand.
// chlo.tan of %arg2 (default {1,0}) -> {1,0}; chlo.broadcast_multiply with a
// scalar -> {1,0}.  No copies anywhere.

// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"}
// CHECK-SAME:    %arg1: tensor<6xf32> {mhlo.layout_mode = "{0}"}
// CHECK-SAME:    %arg2: tensor<4x6xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-SAME:    -> (tensor<4x6xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen}, tensor<4x6xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen})
// CHECK-NOT:     mhlo.copy
// CHECK:         %[[E:.+]] = chlo.erf %arg0
// CHECK-SAME:      result_layout = dense<[0, 1]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[4,6]{0,1}"
// CHECK-NEXT:    chlo.broadcast_add %[[E]], %arg1
// CHECK-SAME:      xla_shape = "f32[4,6]{0,1}"
// CHECK-NEXT:    %[[T:.+]] = chlo.tan %arg2
// CHECK-SAME:      xla_shape = "f32[4,6]{1,0}"
// CHECK-NEXT:    chlo.broadcast_multiply %[[T]], %arg3
// CHECK-SAME:      xla_shape = "f32[4,6]{1,0}"
// CHECK-NOT:     mhlo.copy
// CHECK:         return
func.func public @main(%x: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"}, %y: tensor<6xf32>,
                       %z: tensor<4x6xf32>, %s: tensor<f32>)
    -> (tensor<4x6xf32> {mhlo.layout_mode = "auto"}, tensor<4x6xf32> {mhlo.layout_mode = "auto"}) {
  %0 = chlo.erf %x : tensor<4x6xf32> -> tensor<4x6xf32>
  %1 = chlo.broadcast_add %0, %y {broadcast_dimensions = array<i64: 1>} : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %2 = chlo.tan %z : tensor<4x6xf32> -> tensor<4x6xf32>
  %3 = chlo.broadcast_multiply %2, %s : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  return %1, %3 : tensor<4x6xf32>, tensor<4x6xf32>
}
