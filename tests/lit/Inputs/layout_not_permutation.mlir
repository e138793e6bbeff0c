// A parameter layout that repeats a dimension: not a permutation.
func.func public @main(%arg0: tensor<4x6xf32> {mhlo.layout_mode = "{0,0}"}) -> tensor<4x6xf32> {
  return %arg0 : tensor<4x6xf32>
}
