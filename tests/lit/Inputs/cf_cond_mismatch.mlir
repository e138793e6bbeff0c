// Input of cf_cond_mismatch.test: three ifs whose branches disagree on the
// result layout.
func.func public @main(%p: tensor<i1>, %x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %a = "stablehlo.if"(%p) ({
    %s = stablehlo.sine %x : tensor<4x4xf32>
    %c = stablehlo.cosine %x : tensor<4x4xf32>
    %d = stablehlo.add %s, %c : tensor<4x4xf32>
    %t = stablehlo.transpose %d, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    stablehlo.return %t : tensor<4x4xf32>
  }, {
    %n = stablehlo.negate %x : tensor<4x4xf32>
    stablehlo.return %n : tensor<4x4xf32>
  }) : (tensor<i1>) -> tensor<4x4xf32>
  %b = "stablehlo.if"(%p) ({
    %t = stablehlo.transpose %y, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    stablehlo.return %t : tensor<4x4xf32>
  }, {
    %n = stablehlo.negate %y : tensor<4x4xf32>
    %e = stablehlo.exponential %n : tensor<4x4xf32>
    %d = stablehlo.add %n, %e : tensor<4x4xf32>
    stablehlo.return %d : tensor<4x4xf32>
  }) : (tensor<i1>) -> tensor<4x4xf32>
  %c = "stablehlo.if"(%p) ({
    %a2 = stablehlo.add %x, %y : tensor<4x4xf32>
    %t = stablehlo.transpose %a2, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    stablehlo.return %t : tensor<4x4xf32>
  }, {
    %n = stablehlo.negate %x : tensor<4x4xf32>
    %e = stablehlo.exponential %n : tensor<4x4xf32>
    %m = stablehlo.multiply %n, %e : tensor<4x4xf32>
    stablehlo.return %m : tensor<4x4xf32>
  }) : (tensor<i1>) -> tensor<4x4xf32>
  return %a, %b, %c : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}
