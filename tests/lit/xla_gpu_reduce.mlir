// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_reduce_small.mlir | FileCheck %s --check-prefix=SMALL

// Rule (XLA §11.9 and XLA §5.1 step 4, target:gpu-reduce-row-reduction):
// when the reduced dims hold at least 32 elements, XLA:GPU asks the reduce's
// operand to put them most minor (a row reduction): reduced dims in reverse
// order of `dimensions`, then the kept dims in the order of the output
// layout.  Non-mandatory.
//
// GPUT "ReduceOperandLayout" (there c64[512,64,1024,32,128]; here smaller,
// with exactly 8*4 = 32 reduced elements, the threshold): reduced over
// {1,3} with output {2,1,0}, the operand is asked for {3,1,4,2,0}.  The
// negate keeps the row-major parameter's layout, so the reduce reads a copy.
// CHECK-LABEL: func.func public @main
// CHECK:         %[[C:.+]] = mhlo.copy
// CHECK-SAME:      xla_shape = "c64[5,8,6,4,7]{3,1,4,2,0}"
// CHECK:         stablehlo.reduce(%[[C]] init:
// CHECK-SAME:      xla_shape = "c64[5,6,7]{2,1,0}"
func.func public @main(%x: tensor<5x8x6x4x7xcomplex<f32>>) -> tensor<5x6x7xcomplex<f32>> {
  %n = stablehlo.negate %x : tensor<5x8x6x4x7xcomplex<f32>>
  %z = stablehlo.constant dense<(0.0, 0.0)> : tensor<complex<f32>>
  %0 = stablehlo.reduce(%n init: %z) applies stablehlo.add across dimensions = [1, 3] : (tensor<5x8x6x4x7xcomplex<f32>>, tensor<complex<f32>>) -> tensor<5x6x7xcomplex<f32>>
  return %0 : tensor<5x6x7xcomplex<f32>>
}

// GPUT "ReduceOperandLayoutSmallReductionDimension" (smaller shapes):
// reducing one dim of size 16 is below the threshold: nothing is asked of the operand, which
// stays {3,2,1,0}, and no copy is made.
// SMALL-LABEL: func.func public @main
// SMALL-NOT:     mhlo.copy
// SMALL:         stablehlo.negate %arg0
// SMALL-SAME:      xla_shape = "c64[5,16,6,7]{3,2,1,0}"
// SMALL:         stablehlo.reduce
// SMALL-SAME:      xla_shape = "c64[5,6,7]{2,1,0}"
// SMALL-NOT:     mhlo.copy
