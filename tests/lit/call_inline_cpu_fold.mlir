// RUN: stablehlo-layout assign --target xla-cpu %s | FileCheck %s

// Two call sites that end up with the same layouts share one function: the
// per-site clones made for inlining fold back, and no .layout<k> appears.

// CHECK-LABEL: func.func public @main
// CHECK:         call @g(%arg0)
// CHECK:         call @g(%arg1)
// CHECK-NOT:     @g.layout
// CHECK-NOT:     @g.site
// CHECK-LABEL: func.func private @g(
// CHECK:         stablehlo.exponential %arg0
// CHECK-SAME:      xla_shape = "f32[3,5]{1,0}"
// CHECK-NOT:     func.func
func.func public @main(%x: tensor<3x5xf32>, %y: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %0 = call @g(%x) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %1 = call @g(%y) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  return %0, %1 : tensor<3x5xf32>, tensor<3x5xf32>
}
func.func private @g(%a: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %0 = stablehlo.exponential %a : tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}
