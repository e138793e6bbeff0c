// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s

// Rule (XLA §11.6, target:gpu-fft-default): cuFFT needs dimension 0
// most major: the fft reads operand 0 and writes its result in the default
// layout, mandatory.
//
// GPUT "FftLayout": the parameter is pinned {0,1}, so it is copied to
// {1,0}; the fft writes {1,0}; the transpose after it is a bitcast ({0,1})
// and the row-major result needs a root copy.  (The generic rules would run
// the fft on {0,1} with no copy in.)
// CHECK-LABEL: func.func public @main
// CHECK:         %[[C:.+]] = mhlo.copy %arg0
// CHECK-SAME:      xla_shape = "c64[8,32]{1,0}"
// CHECK:         %[[F:.+]] = stablehlo.fft %[[C]]
// CHECK-SAME:      xla_shape = "c64[8,32]{1,0}"
// CHECK:         %[[T:.+]] = stablehlo.transpose %[[F]]
// CHECK-SAME:      xla_shape = "c64[32,8]{0,1}"
// CHECK:         %[[R:.+]] = mhlo.copy %[[T]]
// CHECK-SAME:      xla_shape = "c64[32,8]{1,0}"
// CHECK:         return %[[R]]
func.func public @main(%x: tensor<8x32xcomplex<f32>> {mhlo.layout_mode = "{0,1}"}) -> tensor<32x8xcomplex<f32>> {
  %0 = stablehlo.fft %x, type = FFT, length = [32] : (tensor<8x32xcomplex<f32>>) -> tensor<8x32xcomplex<f32>>
  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<8x32xcomplex<f32>>) -> tensor<32x8xcomplex<f32>>
  return %1 : tensor<32x8xcomplex<f32>>
}
