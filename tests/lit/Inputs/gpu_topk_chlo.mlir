func.func public @main(%x: tensor<2048x6xf32> {mhlo.layout_mode = "auto"}) -> (tensor<6x8xf32> {mhlo.layout_mode = "auto"}, tensor<6x8xi32> {mhlo.layout_mode = "auto"}) {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<2048x6xf32>) -> tensor<6x2048xf32>
  %0:2 = chlo.top_k(%t, k = 8) : tensor<6x2048xf32> -> (tensor<6x8xf32>, tensor<6x8xi32>)
  return %0#0, %0#1 : tensor<6x8xf32>, tensor<6x8xi32>
}
