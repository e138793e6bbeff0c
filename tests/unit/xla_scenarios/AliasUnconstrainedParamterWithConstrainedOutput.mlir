// XLA LayoutAssignmentTest.AliasUnconstrainedParamterWithConstrainedOutput: entry parameter 0 is donated to the result
// (tf.aliasing_output, JAX's spelling of input_output_alias={ {}: (0, {}) });
// parameter 0: auto, parameter 1: pinned to its default, result: {1,0}.
module @EntryAlias {
  func.func @main(%p0: tensor<65x65xf32> {mhlo.layout_mode = "auto", tf.aliasing_output = 0 : i32} loc("p0"),
                  %p1: tensor<4225xf32> {mhlo.layout_mode = "{0}"} loc("p1"))
      -> (tensor<65x65xf32> {mhlo.layout_mode = "{1,0}"}) {
    %0 = stablehlo.reshape %p1 : (tensor<4225xf32>) -> tensor<65x65xf32> loc("r")
    %1 = stablehlo.add %p0, %0 : tensor<65x65xf32> loc("a")
    %2 = stablehlo.transpose %1, dims = [1, 0] : (tensor<65x65xf32>) -> tensor<65x65xf32> loc("t")
    return %2 : tensor<65x65xf32>
  }
}
