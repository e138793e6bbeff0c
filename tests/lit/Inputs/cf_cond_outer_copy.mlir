// Input of cf_cond_outer_copy.test: an if whose branches read a column-major
// outer value row-major.
func.func public @main(%p: tensor<i1>, %y: tensor<4x4xf32> {mhlo.layout_mode = "{0,1}"}) -> tensor<4x4xf32> {
  %b = "stablehlo.if"(%p) ({
    %t = stablehlo.transpose %y, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    stablehlo.return %t : tensor<4x4xf32>
  }, {
    %n = stablehlo.negate %y : tensor<4x4xf32>
    %e = stablehlo.exponential %n : tensor<4x4xf32>
    %d = stablehlo.add %n, %e : tensor<4x4xf32>
    stablehlo.return %d : tensor<4x4xf32>
  }) : (tensor<i1>) -> tensor<4x4xf32>
  return %b : tensor<4x4xf32>
}
