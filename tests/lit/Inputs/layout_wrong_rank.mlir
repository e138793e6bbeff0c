// A rank-3 layout on a rank-2 parameter.
func.func public @main(%arg0: tensor<4x6xf32> {mhlo.layout_mode = "{0,1,2}"}) -> tensor<4x6xf32> {
  return %arg0 : tensor<4x6xf32>
}
