func.func public @main(%a: tensor<3x5x2xi4> {mhlo.layout_mode = "{0,1,2}"}) -> (tensor<3x5xi8> {mhlo.layout_mode = "{0,1}"}) {
  %b = stablehlo.bitcast_convert %a : (tensor<3x5x2xi4>) -> tensor<3x5xi8>
  return %b : tensor<3x5xi8>
}
