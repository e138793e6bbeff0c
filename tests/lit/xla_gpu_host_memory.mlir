// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s

// Rule (XLA §11.8, target:gpu-host-memory-default): MoveToHost /
// MoveToDevice (and JAX's annotate_device_placement, which XLA turns into
// one of them first) read operand 0 and write the result in the default
// layout, mandatory, so no transpose ever runs on a host buffer.
//
// GPUT "MoveToHostCustomCallConstrained": the parameter is pinned {0,1,2}
// and the next call insists on {1,2,0}; the transfer itself stays {2,1,0},
// with a copy on each side.  (The generic rules would move {1,2,0} data.)
// CHECK-LABEL: func.func public @main
// CHECK:         %[[C:.+]] = mhlo.copy %arg0
// CHECK-SAME:      xla_shape = "f32[2,5,5]{2,1,0}"
// CHECK:         %[[H:.+]] = stablehlo.custom_call @MoveToHost(%[[C]])
// CHECK-SAME:      xla_shape = "f32[2,5,5]{2,1,0}"
// CHECK:         %[[D:.+]] = mhlo.copy %[[H]]
// CHECK-SAME:      xla_shape = "f32[2,5,5]{1,2,0}"
// CHECK:         stablehlo.custom_call @fixed_call(%[[D]])
func.func public @main(%x: tensor<2x5x5xf32> {mhlo.layout_mode = "{0,1,2}"}) -> (tensor<2x5x5xf32> {mhlo.layout_mode = "auto"}) {
  %0 = stablehlo.custom_call @MoveToHost(%x) : (tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %1 = stablehlo.custom_call @fixed_call(%0) {operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], result_layouts = [dense<[2, 1, 0]> : tensor<3xindex>]} : (tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  return %1 : tensor<2x5x5xf32>
}
