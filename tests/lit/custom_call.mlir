// RUN: stablehlo-layout assign --target generic %s | FileCheck %s

// A custom_call carrying both operand_layouts and result_layouts is a
// layout-constrained custom call in HLO (XLA §12.3).  Layout assignment
// pins its result buffers to result_layouts and each operand to
// operand_layouts, all mandatory (XLA §2.5), so mismatching neighbours get copies
// around it.  For target "LayoutConstraint" operand_layouts is ignored: operand
// 0 is constrained to the call's own result layout, and the op cannot change
// layout (XLA §2.5, XLA §4; jax's with_layout_constraint writes a dummy ascending
// operand layout, "XLA will ignore it").
//
// @my_kernel with column-major operand and result layouts, fed by the row-major
//   parameter %arg0 and returned as a row-major result: one copy of %arg0 to
//   {0,1} before the call, and, since the result demand is only a soft request
//   refused by the mandatory call result, one root copy to {1,0} after it.
// @LayoutConstraint with result {1,0} (operand_layouts [0,1] to be ignored) on
//   the row-major %arg1: no copy at all.
// @LayoutConstraint with result {0,1} on the row-major %arg2: one copy of %arg2
//   to {0,1}; the following transpose then becomes a bitcast whose output is
//   the row-major result (transpose forward rule, mandatory, XLA §5.2): no root copy.

// CHECK-LABEL: func.func public @main(
// CHECK-DAG:     %[[CX:.+]] = mhlo.copy %arg0 {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,6]{0,1}"}
// CHECK-DAG:     %[[CW:.+]] = mhlo.copy %arg2 {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,6]{0,1}"}
// CHECK-NOT:     mhlo.copy
// CHECK:         %[[K:.+]] = stablehlo.custom_call @my_kernel(%[[CX]])
// CHECK-SAME:      result_layout = dense<[0, 1]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[4,6]{0,1}"
// CHECK-NEXT:    %[[RK:.+]] = mhlo.copy %[[K]]
// CHECK-SAME:      result_layout = dense<[1, 0]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[4,6]{1,0}"
// CHECK-NEXT:    %[[L1:.+]] = stablehlo.custom_call @LayoutConstraint(%arg1)
// CHECK-SAME:      xla_shape = "f32[4,6]{1,0}"
// CHECK-NEXT:    %[[L2:.+]] = stablehlo.custom_call @LayoutConstraint(%[[CW]])
// CHECK-SAME:      xla_shape = "f32[4,6]{0,1}"
// CHECK-NEXT:    %[[T:.+]] = stablehlo.transpose %[[L2]], dims = [1, 0]
// CHECK-SAME:      xla_shape = "f32[6,4]{1,0}"
// CHECK-NEXT:    return %[[RK]], %[[L1]], %[[T]]
func.func public @main(%x: tensor<4x6xf32>, %y: tensor<4x6xf32>, %w: tensor<4x6xf32>)
    -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<6x4xf32>) {
  %0 = stablehlo.custom_call @my_kernel(%x) {api_version = 2 : i32,
      operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
      result_layouts = [dense<[0, 1]> : tensor<2xindex>]} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %1 = stablehlo.custom_call @LayoutConstraint(%y) {api_version = 1 : i32,
      operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
      result_layouts = [dense<[1, 0]> : tensor<2xindex>]} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %2 = stablehlo.custom_call @LayoutConstraint(%w) {api_version = 1 : i32,
      operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
      result_layouts = [dense<[0, 1]> : tensor<2xindex>]} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %3 = stablehlo.transpose %2, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  return %0, %1, %3 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<6x4xf32>
}
