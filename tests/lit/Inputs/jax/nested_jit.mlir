module @jit_nested_jit_twice attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @empty_mesh = <[]> {stablehlo.mesh = {axes = []}}
  func.func public @main(%arg0: tensor<2x5xf32> {mhlo.layout_mode = "{0,1}", sdy.sharding = #sdy.sharding<@empty_mesh, [{}, {}]>}, %arg1: tensor<2x5xf32>) -> (tensor<5x2xf32> {jax.result_info = "result[0]"}, tensor<5x2xf32> {jax.result_info = "result[1]"}) {
    %0 = call @_inner(%arg0) : (tensor<2x5xf32>) -> tensor<5x2xf32>
    %1 = call @_inner(%arg1) : (tensor<2x5xf32>) -> tensor<5x2xf32>
    return %0, %1 : tensor<5x2xf32>, tensor<5x2xf32>
  }
  func.func private @_inner(%arg0: tensor<2x5xf32>) -> tensor<5x2xf32> {
    %0 = stablehlo.tanh %arg0 : tensor<2x5xf32>
    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<2x5xf32>) -> tensor<5x2xf32>
    return %1 : tensor<5x2xf32>
  }
}
