func.func public @main(%x: tensor<10x20xf32>) -> (tensor<1x10x20xf32> {mhlo.layout_mode = "{0,2,1}"}) {
  %0 = stablehlo.reshape %x : (tensor<10x20xf32>) -> tensor<1x10x20xf32>
  return %0 : tensor<1x10x20xf32>
}
