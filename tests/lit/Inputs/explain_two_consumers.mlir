// One free parameter, two consumers that want it laid out differently: the
// transpose (whose pinned result wants the operand {0,1}) and the negate
// (whose pinned result wants {1,0}).  The first demand to reach the
// parameter wins; the other consumer gets the one copy.
func.func public @main(%x: tensor<4x6xf32> {mhlo.layout_mode = "auto"}) -> (tensor<6x4xf32>, tensor<4x6xf32>) {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %n = stablehlo.negate %x : tensor<4x6xf32>
  return %t, %n : tensor<6x4xf32>, tensor<4x6xf32>
}
