// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_topk_chlo.mlir | FileCheck %s --check-prefix=CHLO

// Rule (XLA §11.4, target:gpu-topk-default): the TopK kernel
// (custom_call @__gpu$TopK) writes both results in the default layout, and
// XLA:GPU treats it as unable to change layout, so its operand must match:
// the operand is row-major too.
//
// GPUT "TopKLayout": the operand is a transpose of a row-major parameter.
// The transpose must write {1,0}, so it stays a bitcast by reading a {0,1}
// copy of the parameter.  (The generic rules let the custom call read the
// transpose's bitcast layout {0,1} and need no copy.)
// CHECK-LABEL: func.func public @main
// CHECK:         %[[C:.+]] = mhlo.copy %arg0
// CHECK-SAME:      xla_shape = "f32[2048,6]{0,1}"
// CHECK:         %[[T:.+]] = stablehlo.transpose %[[C]]
// CHECK-SAME:      xla_shape = "f32[6,2048]{1,0}"
// CHECK:         stablehlo.custom_call @__gpu$TopK(%[[T]])
// CHECK-SAME:      xla_shape = "(f32[6,8]{1,0}, s32[6,8]{1,0})"
func.func public @main(%x: tensor<2048x6xf32>) -> (tensor<6x8xf32>, tensor<6x8xi32>) {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<2048x6xf32>) -> tensor<6x2048xf32>
  %0:2 = stablehlo.custom_call @"__gpu$TopK"(%t) : (tensor<6x2048xf32>) -> (tensor<6x8xf32>, tensor<6x8xi32>)
  return %0#0, %0#1 : tensor<6x8xf32>, tensor<6x8xi32>
}

// chlo.top_k becomes either that TopK kernel or a sort before XLA:GPU lays
// it out; both read and write the default layout.  With a free parameter and
// free results the generic rules would give the top_k {0,1} operand and
// results; on GPU they are {1,0}, and the parameter takes {0,1} so that the
// transpose is a bitcast.
// CHLO-LABEL: func.func public @main
// CHLO-SAME:    %arg0: tensor<2048x6xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen}
// CHLO-NOT:     mhlo.copy
// CHLO:         stablehlo.transpose %arg0
// CHLO-SAME:      xla_shape = "f32[6,2048]{1,0}"
// CHLO:         chlo.top_k
// CHLO-SAME:      xla_shape = "(f32[6,8]{1,0}, s32[6,8]{1,0})"
