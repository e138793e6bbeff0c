func.func public @main(%in: tensor<16x4x8xf32> {mhlo.layout_mode = "{0,2,1}"}, %out: tensor<32x4x8xf32> {mhlo.layout_mode = "{0,1,2}"}, %a: tensor<2xi32>, %b: tensor<2xi32>, %c: tensor<2xi32>, %d: tensor<2xi32>) -> (tensor<32x4x8xf32> {mhlo.layout_mode = "{0,1,2}"}) {
  %0 = stablehlo.custom_call @ragged_all_to_all(%in, %out, %a, %b, %c, %d) {api_version = 4 : i32, backend_config = {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}} : (tensor<16x4x8xf32>, tensor<32x4x8xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<32x4x8xf32>
  return %0 : tensor<32x4x8xf32>
}
