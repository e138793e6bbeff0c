// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_reshape_to_result.mlir | FileCheck %s --check-prefix=ONE
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_reshape_two_ones.mlir | FileCheck %s --check-prefix=TWO

// Rule (XLA §11.9, target:gpu-reshape-bitcast): XLA:GPU derives reshape
// layouts with AlignLayoutsGPU.  Like AlignLayouts it ignores size-1 dims,
// but it puts them back where the other side's existing layout has them
// instead of most major.  Where size-1 dims sit never changes the bytes, but
// a different minor_to_major still costs a copy (XLA §13.2).
//
// A parameter f32[1,10,20] pinned {0,2,1} reshaped to the row-major result
// f32[10,20]{1,0}: the base rule asks the parameter for {2,1,0} and copies
// it; the GPU rule keeps the size-1 dim 0 most minor, as the parameter has
// it: {0,2,1}, no copy.
// CHECK-LABEL: func.func public @main
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.reshape %arg0
// CHECK-SAME:      xla_shape = "f32[10,20]{1,0}"
// CHECK-NOT:     mhlo.copy
func.func public @main(%x: tensor<1x10x20xf32> {mhlo.layout_mode = "{0,2,1}"}) -> tensor<10x20xf32> {
  %0 = stablehlo.reshape %x : (tensor<1x10x20xf32>) -> tensor<10x20xf32>
  return %0 : tensor<10x20xf32>
}

// GPUT "ReshapeBitcastMinimizeChanges": f32[10,20]{1,0} ->
// f32[1,10,20]{0,2,1}: the reshape writes the pinned result layout, no copy.
// ONE-LABEL: func.func public @main
// ONE-NOT:     mhlo.copy
// ONE:         stablehlo.reshape %arg0
// ONE-SAME:      xla_shape = "f32[1,10,20]{0,2,1}"
// ONE-NOT:     mhlo.copy

// GPUT "ReshapeBitcastMinimizeChangesMultipleOnes": f32[10,20]{1,0} ->
// f32[1,10,1,20]{0,2,3,1}, no copy.
// TWO-LABEL: func.func public @main
// TWO-NOT:     mhlo.copy
// TWO:         stablehlo.reshape %arg0
// TWO-SAME:      xla_shape = "f32[1,10,1,20]{0,2,3,1}"
// TWO-NOT:     mhlo.copy
