func.func public @main(%x: tensor<2x64x64x16xf64>, %w: tensor<32x3x3x16xf64>) -> tensor<2x64x64x32xf64> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 1, 0, f]x[o, 1, 0, i]->[b, 1, 0, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x64x64x16xf64>, tensor<32x3x3x16xf64>) -> tensor<2x64x64x32xf64>
  return %0 : tensor<2x64x64x32xf64>
}
