// The seed's story.  JAX pins every entry parameter to the row-major default
// layout {1,0}.  The transpose wants its operand laid out {0,1}, because then
// it is a bitcast that moves no bytes; the pinned parameter cannot change,
// so the data movement lands on that one edge as an mhlo.copy.
// Run with --entry-layouts free and the parameter takes {0,1} instead: no copy.
func.func public @main(%x: tensor<16x4xf32>) -> tensor<4x16xf32> {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32>
  %y = stablehlo.negate %t : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
