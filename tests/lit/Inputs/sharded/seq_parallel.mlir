module @jit_local attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=2, "model"=4]> {stablehlo.mesh = {axes = [{name = "data", size = 2 : i64}, {name = "model", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<4x16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"model"}, {}]>}, %arg1: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}) -> (tensor<4x4x16xf32> {jax.result_info = "result"}) {
    %0 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{"data"}, {"model"}, {}]>, <@mesh, [{}, {"model"}]>] out_shardings=[<@mesh, [{"data"}, {}, {"model"}]>] manual_axes={"data", "model"} (%arg2: tensor<2x4x8xf32>, %arg3: tensor<8x4xf32>) {
      %1 = "stablehlo.all_gather"(%arg2) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> : (tensor<2x4x8xf32>) -> tensor<2x16x8xf32>
      %2 = stablehlo.dot_general %1, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x8xf32>, tensor<8x4xf32>) -> tensor<2x16x4xf32>
      %3 = "stablehlo.reduce_scatter"(%2) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, scatter_dimension = 1 : i64, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %15 = stablehlo.add %arg4, %arg5 : tensor<f32>
        stablehlo.return %15 : tensor<f32>
      }) : (tensor<2x16x4xf32>) -> tensor<2x4x4xf32>
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %4 = stablehlo.reduce(%3 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<4xf32>
      %cst_0 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
      %5 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4xf32>
      %6 = stablehlo.divide %4, %5 : tensor<4xf32>
      %7 = "stablehlo.all_reduce"(%6) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %15 = stablehlo.add %arg4, %arg5 : tensor<f32>
        stablehlo.return %15 : tensor<f32>
      }) : (tensor<4xf32>) -> tensor<4xf32>
      %cst_1 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %8 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4xf32>
      %9 = stablehlo.divide %7, %8 : tensor<4xf32>
      %10 = "stablehlo.collective_permute"(%3) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0], [4, 5], [5, 6], [6, 7], [7, 4]]> : tensor<8x2xi64>}> : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
      %11 = stablehlo.broadcast_in_dim %9, dims = [2] : (tensor<4xf32>) -> tensor<1x1x4xf32>
      %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1, 2] : (tensor<1x1x4xf32>) -> tensor<2x4x4xf32>
      %13 = stablehlo.subtract %10, %12 : tensor<2x4x4xf32>
      %14 = stablehlo.transpose %13, dims = [0, 2, 1] : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
      sdy.return %14 : tensor<2x4x4xf32>
    } : (tensor<4x16x8xf32>, tensor<8x16xf32>) -> tensor<4x4x16xf32>
    return %0 : tensor<4x4x16xf32>
  }
}
