func.func public @main(%x: tensor<3x4xf32> {mhlo.layout_mode = "{0,1}"}) -> tensor<4x3xf32> {
  %0 = stablehlo.sine %x : tensor<3x4xf32>
  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}
