// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_dot_of_dot.mlir | FileCheck %s --check-prefix=CHAIN

// Rules (XLA §11.2, target:gpu-transpose-of-dot and
// target:gpu-dot-output): a transpose whose operand is a single-use dot asks
// for the layout that makes it a bitcast to a default-layout result, if
// cuBLAS can write it.  A dot with batch dims or several free dims then
// writes the layout a user asked for if cuBLAS can write it, else the
// default.  Users are visited first (reverse post-order), so the dot sees
// the transpose's demand.
//
// GPUT "TransposedDotLayout": transpose dims [1,0,2,3] -> the dot should be
// major-to-minor [1,0,2,3] = {3,2,0,1}: (rows, batch, cols) is a layout
// cuBLAS writes, so the dot takes it and the transpose is a bitcast to the
// row-major result.  The operands keep their (valid) default layouts.
// CHECK-LABEL: func.func public @main
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.dot_general %arg0, %arg1
// CHECK-SAME:      xla_shape = "f32[5,2,4,6]{3,2,0,1}"
// CHECK:         stablehlo.transpose
// CHECK-SAME:      xla_shape = "f32[2,5,4,6]{3,2,1,0}"
// CHECK-NOT:     mhlo.copy
func.func public @main(%p0: tensor<5x2x3xf32>, %p1: tensor<5x3x4x6xf32>) -> tensor<2x5x4x6xf32> {
  %0 = stablehlo.dot_general %p0, %p1, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<5x2x3xf32>, tensor<5x3x4x6xf32>) -> tensor<5x2x4x6xf32>
  %1 = stablehlo.transpose %0, dims = [1, 0, 2, 3] : (tensor<5x2x4x6xf32>) -> tensor<2x5x4x6xf32>
  return %1 : tensor<2x5x4x6xf32>
}

// GPUT "TransposedDotOfDotLayout": the transpose's wish {2,3,0,1} splits
// dot.2's row group, so cuBLAS cannot write it and dot.2 writes the default.
// dot.2 reads dot.1 (three free dims) forced to major-to-minor
// [contracting 2, free 0,1,3] = {3,1,0,2}, which dot.1 cannot write: dot.1
// writes the default and a copy sits between the dots.  dot.1's rhs (free
// dims 0,2,3 around contracting 1) is forced to {3,2,0,1}.
// CHAIN-LABEL: func.func public @main
// CHAIN:         %[[P1:.+]] = mhlo.copy %arg1
// CHAIN-SAME:      xla_shape = "f32[2,8,4,4]{3,2,0,1}"
// CHAIN:         %[[D1:.+]] = stablehlo.dot_general %arg0, %[[P1]]
// CHAIN-SAME:      xla_shape = "f32[50,2,4,4]{3,2,1,0}"
// CHAIN:         %[[C:.+]] = mhlo.copy %[[D1]]
// CHAIN-SAME:      xla_shape = "f32[50,2,4,4]{3,1,0,2}"
// CHAIN:         %[[D2:.+]] = stablehlo.dot_general %[[C]], %arg2
// CHAIN-SAME:      xla_shape = "f32[50,2,4,38]{3,2,1,0}"
// CHAIN:         stablehlo.transpose %[[D2]]
// CHAIN-SAME:      xla_shape = "f32[2,50,38,4]{2,3,0,1}"
