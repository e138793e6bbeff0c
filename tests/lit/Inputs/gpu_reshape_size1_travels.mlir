func.func public @main(%x: tensor<10x20xf32> {mhlo.layout_mode = "{0,1}"}) -> (tensor<1x10x20xf32> {mhlo.layout_mode = "auto"}, tensor<10x1x20xf32> {mhlo.layout_mode = "auto"}, tensor<10x20x1xf32> {mhlo.layout_mode = "auto"}) {
  %0 = stablehlo.reshape %x : (tensor<10x20xf32>) -> tensor<1x10x20xf32>
  %1 = stablehlo.reshape %x : (tensor<10x20xf32>) -> tensor<10x1x20xf32>
  %2 = stablehlo.reshape %x : (tensor<10x20xf32>) -> tensor<10x20x1xf32>
  return %0, %1, %2 : tensor<1x10x20xf32>, tensor<10x1x20xf32>, tensor<10x20x1xf32>
}
