// RUN: stablehlo-layout assign %s | FileCheck %s
// RUN: stablehlo-layout assign --entry-layouts free %s | FileCheck %s --check-prefix=FREE

// The seed's story: a row-major parameter feeds a transpose whose result the
// caller wants row-major.  The transpose is a bitcast only if its operand is
// {0,1}; the pinned parameter cannot change, so the copy lands on that edge.

// CHECK-LABEL: func.func public @main
// CHECK-SAME:    mhlo.layout_mode = "{1,0}"
// CHECK:         %[[C:.+]] = mhlo.copy %arg0
// CHECK-SAME:      result_layout = dense<[0, 1]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[16,4]{0,1}"
// CHECK-NEXT:    %[[T:.+]] = stablehlo.transpose %[[C]]
// CHECK-SAME:      xla_shape = "f32[4,16]{1,0}"
// CHECK-NOT:     mhlo.copy
// CHECK:         return

// Left free, the parameter takes the default and the transpose's output the
// bitcast layout, which is written back as the result layout: no copy.
// FREE-LABEL: func.func public @main
// FREE-NOT:     mhlo.copy
// FREE:         stablehlo.transpose %arg0
// FREE-SAME:      xla_shape = "f32[4,16]{0,1}"
// FREE:         return
func.func public @main(%x: tensor<16x4xf32>) -> tensor<4x16xf32> {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32>
  %y = stablehlo.negate %t : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
