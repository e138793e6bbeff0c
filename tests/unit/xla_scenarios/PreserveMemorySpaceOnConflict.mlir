// XLA LayoutAssignmentTest.PreserveMemorySpaceOnConflict, layout part only (the
// host memory space is dropped). The tuple parameter is flattened: element 0 is
// pinned to {0,1}, element 1 is cleared; the result asks {1,0} for element 0 and
// leaves element 1 cleared, so the result layout is only partially set.
module @test_module {
  func.func @main(%gte0: tensor<2x3xf32> {mhlo.layout_mode = "{0,1}"} loc("gte0"),
                  %gte1: tensor<2x3xf32> {mhlo.layout_mode = "auto"} loc("gte1"))
      -> (tensor<2x3xf32> {mhlo.layout_mode = "{1,0}"}, tensor<2x3xf32> {mhlo.layout_mode = "auto"}) {
    return %gte0, %gte1 : tensor<2x3xf32>, tensor<2x3xf32>
  }
}
