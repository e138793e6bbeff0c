func.func public @main(%p0: tensor<8x50xf32>, %p1: tensor<2x8x4x4xf32>, %p2: tensor<4x38xf32>) -> (tensor<2x50x38x4xf32> {mhlo.layout_mode = "{2,3,0,1}"}) {
  %0 = stablehlo.dot_general %p0, %p1, contracting_dims = [0] x [1] : (tensor<8x50xf32>, tensor<2x8x4x4xf32>) -> tensor<50x2x4x4xf32>
  %1 = stablehlo.dot_general %0, %p2, contracting_dims = [2] x [0] : (tensor<50x2x4x4xf32>, tensor<4x38xf32>) -> tensor<50x2x4x38xf32>
  %2 = stablehlo.transpose %1, dims = [1, 0, 3, 2] : (tensor<50x2x4x38xf32>) -> tensor<2x50x38x4xf32>
  return %2 : tensor<2x50x38x4xf32>
}
