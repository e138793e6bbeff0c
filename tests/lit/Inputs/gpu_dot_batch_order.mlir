func.func public @main(%a: tensor<5x6x2x3xf32>, %b: tensor<6x5x3x4xf32>) -> tensor<5x6x2x4xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0, 1] x [1, 0], contracting_dims = [3] x [2] : (tensor<5x6x2x3xf32>, tensor<6x5x3x4xf32>) -> tensor<5x6x2x4xf32>
  return %0 : tensor<5x6x2x4xf32>
}
