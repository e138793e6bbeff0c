func.func public @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = stablehlo.negate %x : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
