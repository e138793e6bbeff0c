func.func public @main(%v: tensor<64xf32>) -> tensor<16xf32> {
  %m = stablehlo.constant dense<1.0> : tensor<64x16xf32>
  %0 = stablehlo.dot_general %v, %m, contracting_dims = [0] x [0] : (tensor<64xf32>, tensor<64x16xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
