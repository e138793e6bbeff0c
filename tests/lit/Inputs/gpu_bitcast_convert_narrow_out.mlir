func.func public @main(%a: tensor<3x5xi8>) -> (tensor<3x5x2xi4> {mhlo.layout_mode = "{0,1,2}"}) {
  %b = stablehlo.bitcast_convert %a : (tensor<3x5xi8>) -> tensor<3x5x2xi4>
  return %b : tensor<3x5x2xi4>
}
