// A tiled layout the pass itself chose earlier (marked chosen, so open again)
// that this run decides differently: the tiling cannot follow, so it is refused.
func.func public @main(%x: tensor<16x128xf32> {mhlo.layout_mode = "{0,1:T(8,128)}", stablehlo_layout.chosen})
    -> (tensor<16x128xf32> {mhlo.layout_mode = "{1,0}"}) {
  %n = stablehlo.negate %x : tensor<16x128xf32>
  return %n : tensor<16x128xf32>
}
