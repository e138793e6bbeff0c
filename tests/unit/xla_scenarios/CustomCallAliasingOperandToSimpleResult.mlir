// XLA LayoutAssignmentTest.CustomCallAliasingOperandToSimpleResult: parameter pinned
// to {0,1}; the result layout is unset (the test parses without filling layouts).
module @test {
  func.func @main(%param: tensor<2x8xi32> {mhlo.layout_mode = "{0,1}"} loc("param"))
      -> (tensor<2x8xi32> {mhlo.layout_mode = "auto"}) {
    %0 = stablehlo.custom_call @something(%param) {output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 0, operand_tuple_indices = []>]} : (tensor<2x8xi32>) -> tensor<2x8xi32> loc("b0")
    return %0 : tensor<2x8xi32>
  }
}
