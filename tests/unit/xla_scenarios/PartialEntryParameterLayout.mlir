// XLA LayoutAssignmentTest.PartialEntryParameterLayout: the module's entry layout
// with parameter 0 cleared (mhlo.layout_mode = "auto"); everything else pinned.
module @EntryLayout {
  func.func @main(%operand: tensor<32x650xf32> {mhlo.layout_mode = "auto"} loc("operand"),
                  %indices: tensor<16x1x18xi32> {mhlo.layout_mode = "{0,1,2}"} loc("indices"))
      -> (tensor<650x32xf32> {mhlo.layout_mode = "{1,0}"}, tensor<18x16x1xi32> {mhlo.layout_mode = "{0,1,2}"}) {
    %0 = stablehlo.transpose %operand, dims = [1, 0] : (tensor<32x650xf32>) -> tensor<650x32xf32> loc("transpose")
    %1 = stablehlo.transpose %indices, dims = [2, 0, 1] : (tensor<16x1x18xi32>) -> tensor<18x16x1xi32> loc("transpose_indices")
    return %0, %1 : tensor<650x32xf32>, tensor<18x16x1xi32>
  }
}
