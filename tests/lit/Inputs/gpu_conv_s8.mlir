func.func public @main(%x: tensor<1x16x32x32xi8>, %w: tensor<32x16x3x3xi8>) -> tensor<1x32x32x32xi32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x16x32x32xi8>, tensor<32x16x3x3xi8>) -> tensor<1x32x32x32xi32>
  return %0 : tensor<1x32x32x32xi32>
}
