// XLA LayoutAssignmentTest.CustomCallLayoutConstrainedTupleResult, written with a
// multi-result custom_call (StableHLO's form of an HLO tuple-shaped custom call).
module @CustomCallLayoutConstrainedTupleResult attributes {mhlo.xla_entry_computation_parameter_layouts = [dense<[1, 0]> : tensor<2xindex>], mhlo.xla_entry_computation_result_layout = [[dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>]]} {
  func.func @main(%p0: tensor<4x4xf32> loc("p0")) -> (tensor<4x4xf32>, tensor<2x3xf32>) {
    %0:2 = stablehlo.custom_call @baz(%p0) {operand_layouts = [dense<[1, 0]> : tensor<2xindex>], result_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>]} : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<2x3xf32>) loc("custom-call")
    return %0#0, %0#1 : tensor<4x4xf32>, tensor<2x3xf32>
  }
}
