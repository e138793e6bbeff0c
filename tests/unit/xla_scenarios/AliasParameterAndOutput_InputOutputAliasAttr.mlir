// XLA LayoutAssignmentTest.AliasParameterAndOutput, with the aliasing spelled the
// way XLA's HLO->StableHLO converter writes input_output_alias: the module
// attribute mhlo.input_output_alias (no tf.aliasing_output on the argument).
module @EntryAlias attributes {mhlo.input_output_alias = [{alias = {kind = "may_alias", parameter_index = array<i64>, parameter_number = 0 : i64}, output_index = array<i64>}]} {
  func.func @main(%p0: tensor<65x65xf32> {mhlo.layout_mode = "auto"} loc("p0"),
                  %p1: tensor<4225xf32> {mhlo.layout_mode = "{0}"} loc("p1"))
      -> (tensor<65x65xf32> {mhlo.layout_mode = "auto"}) {
    %0 = stablehlo.reshape %p1 : (tensor<4225xf32>) -> tensor<65x65xf32> loc("r")
    %1 = stablehlo.add %p0, %0 : tensor<65x65xf32> loc("a")
    %2 = stablehlo.transpose %1, dims = [1, 0] : (tensor<65x65xf32>) -> tensor<65x65xf32> loc("t")
    return %2 : tensor<65x65xf32>
  }
}
