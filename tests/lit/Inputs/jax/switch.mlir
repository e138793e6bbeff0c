module @jit_switch_three attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x3xf32>, %arg1: tensor<i32>) -> (tensor<3x3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<2> : tensor<i32>
    %1 = stablehlo.clamp %c, %0, %c_0 : tensor<i32>
    %2 = "stablehlo.case"(%1) ({
      %3 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<3x3xf32>) -> tensor<3x3xf32>
      stablehlo.return %3 : tensor<3x3xf32>
    }, {
      %3 = stablehlo.negate %arg0 : tensor<3x3xf32>
      stablehlo.return %3 : tensor<3x3xf32>
    }, {
      %3 = stablehlo.exponential %arg0 : tensor<3x3xf32>
      stablehlo.return %3 : tensor<3x3xf32>
    }) : (tensor<i32>) -> tensor<3x3xf32>
    return %2 : tensor<3x3xf32>
  }
}
