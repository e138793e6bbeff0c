// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_reshape_to_result.mlir | FileCheck %s --check-prefix=ONE
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_reshape_two_ones.mlir | FileCheck %s --check-prefix=TWO
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_reshape_size1_travels.mlir | FileCheck %s --check-prefix=TRAVEL

// Rule (target:gpu-reshape-bitcast): across a reshape, XLA:GPU (jaxlib
// 0.10.2) aligns the dims that are not size 1 as AlignLayouts does; a size-1
// dim then travels with the next dim that is not (right above it), and
// trailing size-1 dims are most minor.  A layout the other side already has
// stays when it is one of the equivalent bitcast layouts.  Where size-1 dims
// sit never changes the bytes, but a different minor_to_major still costs a
// copy (§13.2).  Every expectation below is what XLA:GPU compiled for H100
// (deviceless) for the same program.
//
// A parameter f32[1,10,20] pinned {0,2,1} reshaped to the row-major result
// f32[10,20]{1,0}: the reshape reads its operand as {2,1,0} (the row-major
// result's bitcast), so the parameter is copied, as in XLA's after dump.
// CHECK-LABEL: func.func public @main
// CHECK:         mhlo.copy %arg0
// CHECK-SAME:      xla_shape = "f32[1,10,20]{2,1,0}"
// CHECK:         stablehlo.reshape
// CHECK-SAME:      xla_shape = "f32[10,20]{1,0}"
func.func public @main(%x: tensor<1x10x20xf32> {mhlo.layout_mode = "{0,2,1}"}) -> tensor<10x20xf32> {
  %0 = stablehlo.reshape %x : (tensor<1x10x20xf32>) -> tensor<10x20xf32>
  return %0 : tensor<10x20xf32>
}

// Travelling size-1 dims: f32[10,20]{0,1} (column-major) reshaped to [1,10,20], [10,1,20]
// and [10,20,1], results free: the size-1 dim rides above its neighbour,
// or most minor when it trails.
// TRAVEL-LABEL: func.func public @main
// TRAVEL: xla_shape = "f32[1,10,20]{1,0,2}"
// TRAVEL: xla_shape = "f32[10,1,20]{0,2,1}"
// TRAVEL: xla_shape = "f32[10,20,1]{2,0,1}"

// f32[10,20]{1,0} ->
// f32[1,10,20]{0,2,1}: the reshape writes the pinned result layout, no copy.
// ONE-LABEL: func.func public @main
// ONE-NOT:     mhlo.copy
// ONE:         stablehlo.reshape %arg0
// ONE-SAME:      xla_shape = "f32[1,10,20]{0,2,1}"
// ONE-NOT:     mhlo.copy

// f32[10,20]{1,0} ->
// f32[1,10,1,20]{0,2,3,1}, no copy.
// TWO-LABEL: func.func public @main
// TWO-NOT:     mhlo.copy
// TWO:         stablehlo.reshape %arg0
// TWO-SAME:      xla_shape = "f32[1,10,1,20]{0,2,3,1}"
// TWO-NOT:     mhlo.copy
