// XLA LayoutAssignmentTest.CustomCallAliasingOperandToTupleResult: the custom call's
// tuple result is two results here; result {0} aliases operand 0.
module @test {
  func.func @main(%param: tensor<2x8xi32> {mhlo.layout_mode = "{0,1}"} loc("param"))
      -> (tensor<2x8xi32> {mhlo.layout_mode = "auto"}, tensor<2x8xi32> {mhlo.layout_mode = "auto"}) {
    %0:2 = stablehlo.custom_call @something(%param) {output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>]} : (tensor<2x8xi32>) -> (tensor<2x8xi32>, tensor<2x8xi32>) loc("b0")
    return %0#0, %0#1 : tensor<2x8xi32>, tensor<2x8xi32>
  }
}
