// XLA LayoutAssignmentTest.TupleEntryParameterLayoutNoResultConstraint: the tuple
// parameter ((f32[32,650]{0,1}, s32[16,1,18]{0,1,2})) is flattened into two pinned
// arguments; the result layout is cleared (mhlo.layout_mode = "auto").
module @EntryLayout {
  func.func @main(%operand: tensor<32x650xf32> {mhlo.layout_mode = "{0,1}"} loc("operand"),
                  %indices: tensor<16x1x18xi32> {mhlo.layout_mode = "{0,1,2}"} loc("indices"))
      -> (tensor<208x100xf32> {mhlo.layout_mode = "auto"}, tensor<2x144xi32> {mhlo.layout_mode = "auto"}) {
    %0 = stablehlo.reshape %operand : (tensor<32x650xf32>) -> tensor<208x100xf32> loc("reshape")
    %1 = stablehlo.reshape %indices : (tensor<16x1x18xi32>) -> tensor<2x144xi32> loc("reshape_indices")
    return %0, %1 : tensor<208x100xf32>, tensor<2x144xi32>
  }
}
