func.func public @main(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %a = %x) : tensor<i32>, tensor<8x8xf32>
  cond {
    %n = stablehlo.constant dense<5> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %t = stablehlo.transpose %a, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %s = stablehlo.sine %t : tensor<8x8xf32>
    stablehlo.return %j, %s : tensor<i32>, tensor<8x8xf32>
  }
  return %r#1 : tensor<8x8xf32>
}
