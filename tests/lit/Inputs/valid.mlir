// A valid module (used to test option errors).
func.func public @main(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %0 = stablehlo.negate %arg0 : tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}
