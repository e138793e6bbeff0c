func.func public @main(%a: tensor<128x512xf8E4M3FN> {mhlo.layout_mode = "auto"}, %b: tensor<512x1024xf8E4M3FN> {mhlo.layout_mode = "auto"}) -> tensor<128x1024xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<128x512xf8E4M3FN>, tensor<512x1024xf8E4M3FN>) -> tensor<128x1024xf32>
  return %0 : tensor<128x1024xf32>
}
