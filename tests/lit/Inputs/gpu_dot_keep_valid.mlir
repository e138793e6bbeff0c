func.func public @main(%a: tensor<5x2x3xf32> {mhlo.layout_mode = "{1,2,0}"}, %b: tensor<5x3x4xf32> {mhlo.layout_mode = "{1,2,0}"}) -> tensor<5x2x4xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<5x2x3xf32>, tensor<5x3x4xf32>) -> tensor<5x2x4xf32>
  return %0 : tensor<5x2x4xf32>
}
