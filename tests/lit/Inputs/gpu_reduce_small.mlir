func.func public @main(%x: tensor<5x16x6x7xcomplex<f32>>) -> tensor<5x6x7xcomplex<f32>> {
  %n = stablehlo.negate %x : tensor<5x16x6x7xcomplex<f32>>
  %z = stablehlo.constant dense<(0.0, 0.0)> : tensor<complex<f32>>
  %0 = stablehlo.reduce(%n init: %z) applies stablehlo.add across dimensions = [1] : (tensor<5x16x6x7xcomplex<f32>>, tensor<complex<f32>>) -> tensor<5x6x7xcomplex<f32>>
  return %0 : tensor<5x6x7xcomplex<f32>>
}
