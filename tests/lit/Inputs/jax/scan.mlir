module @jit_scan_cumulative attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x4x4xf32>) -> (tensor<4x4xf32> {jax.result_info = "result[0]"}, tensor<5x4x4xf32> {jax.result_info = "result[1]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<5x4x4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2:4 = stablehlo.while(%iterArg = %arg0, %iterArg_1 = %c, %iterArg_2 = %0, %iterArg_3 = %1) : tensor<5x4x4xf32>, tensor<i32>, tensor<4x4xf32>, tensor<5x4x4xf32>
    cond {
      %c_4 = stablehlo.constant dense<5> : tensor<i32>
      %3 = stablehlo.compare LT, %iterArg_1, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %3 : tensor<i1>
    } do {
      %3 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_1) : (tensor<5x4x4xf32>, tensor<i32>) -> tensor<4x4xf32>
      %4:2 = func.call @closed_call(%iterArg_2, %3) : (tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
      %5 = func.call @dynamic_update_index_in_dim(%iterArg_3, %4#1, %iterArg_1) : (tensor<5x4x4xf32>, tensor<4x4xf32>, tensor<i32>) -> tensor<5x4x4xf32>
      %c_4 = stablehlo.constant dense<1> : tensor<i32>
      %6 = stablehlo.add %iterArg_1, %c_4 : tensor<i32>
      stablehlo.return %iterArg, %6, %4#0, %5 : tensor<5x4x4xf32>, tensor<i32>, tensor<4x4xf32>, tensor<5x4x4xf32>
    }
    return %2#2, %2#3 : tensor<4x4xf32>, tensor<5x4x4xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<5x4x4xf32>, %arg1: tensor<i32>) -> tensor<4x4xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c_0, sizes = [1, 4, 4] : (tensor<5x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x4x4xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x4x4xf32>) -> tensor<4x4xf32>
    return %1 : tensor<4x4xf32>
  }
  func.func private @closed_call(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
    %0 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<4x4xf32>
    %2 = stablehlo.dot_general %1, %1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    return %1, %2 : tensor<4x4xf32>, tensor<4x4xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<5x4x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<i32>) -> tensor<5x4x4xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<4x4xf32>) -> tensor<1x4x4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c_0 : (tensor<5x4x4xf32>, tensor<1x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<5x4x4xf32>
    return %1 : tensor<5x4x4xf32>
  }
}
