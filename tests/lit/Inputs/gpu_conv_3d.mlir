func.func public @main(%x: tensor<1x8x8x8x4xf32>, %w: tensor<3x3x3x4x8xf32>) -> tensor<1x8x8x8x8xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f], window = {stride = [1, 1, 1], pad = [[1, 1], [1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x8x4xf32>, tensor<3x3x3x4x8xf32>) -> tensor<1x8x8x8x8xf32>
  return %0 : tensor<1x8x8x8x8xf32>
}
