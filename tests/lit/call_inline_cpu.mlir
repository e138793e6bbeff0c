// RUN: stablehlo-layout assign --target xla-cpu %s | FileCheck %s

// XLA:CPU inlines every call before layout assignment, so each call site of
// @f is laid out in its caller's context.  Site 1 reads a column-major pinned
// parameter: XLA:CPU wants every operand row-major, so that instance of @f
// copies its argument.  Site 2 needs no copy.  The two bodies differ, so the
// second keeps its own clone, named for it; identical bodies would fold back.

// CHECK-LABEL: func.func public @main
// CHECK:         call @f(%arg0)
// CHECK-SAME:      xla_shape = "f32[8,4]{0,1}"
// CHECK:         call @f.layout1(%arg1)
// CHECK-NOT:     mhlo.copy
// CHECK:         return

// CHECK-LABEL: func.func private @f(
// CHECK:         %[[C:.+]] = mhlo.copy %arg0
// CHECK-SAME:      xla_shape = "f32[4,8]{1,0}"
// CHECK:         stablehlo.sine %[[C]]

// CHECK-LABEL: func.func private @f.layout1(
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.sine %arg0
// CHECK-SAME:      xla_shape = "f32[4,8]{1,0}"
// CHECK:         stablehlo.transpose
// CHECK-SAME:      xla_shape = "f32[8,4]{0,1}"
func.func public @main(%x: tensor<4x8xf32> {mhlo.layout_mode = "{0,1}"}, %y: tensor<4x8xf32>) -> (tensor<8x4xf32> {mhlo.layout_mode = "auto"}, tensor<8x4xf32> {mhlo.layout_mode = "auto"}) {
  %0 = call @f(%x) : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %1 = call @f(%y) : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<8x4xf32>
}
func.func private @f(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.sine %a : tensor<4x8xf32>
  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}

