// RUN: stablehlo-layout assign --target xla-cpu %s | FileCheck %s
// RUN: stablehlo-layout assign --target generic %s | FileCheck %s

// A while nested in a while, carrying a value pinned column-major {0,1} on
// the way in and on the way out; the loops only compute elementwise.
//
// XLA lays out callees before callers (XLA §9.1): the inner body, the outer body,
// then @main.  A non-entry computation's parameters ignore the caller in
// round 0 (XLA §13.11), so the inner body's carried value takes the default
// layout: on xla-cpu because sine reads it row-major (XLA §10), on generic because
// the default loop picks the parameter first (XLA §7.1).  The inner body result is
// {1,0} = its parameter, so the inner while is {1,0} (XLA §2.2), the outer body's
// parameter and multiply follow, and so does the outer while.  Only @main can
// adapt: the pinned {0,1} parameter is copied to {1,0} before the outer loop
// (on the init operand, XLA §9.2), and the loop result is copied back to {0,1} at
// the return (the pinned result is a soft demand enforced by a root copy,
// XLA §3.4, XLA §8.1).  No copy inside either loop: the column-major pin does not leak
// into the loops, it is paid for once on each side.
//
// Both targets agree.  Cross-checked for xla-cpu against XLA (default and
// raw dumps): the same two copies, nothing inside the loops.

// CHECK:       module attributes {mhlo.xla_entry_computation_parameter_layouts = [dense<[0, 1]> : tensor<2xindex>], mhlo.xla_entry_computation_result_layout = [dense<[0, 1]> : tensor<2xindex>]}
// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<4x8xf32> {mhlo.layout_mode = "{0,1}"}
// CHECK-SAME:    -> (tensor<4x8xf32> {mhlo.layout_mode = "{0,1}"})
// CHECK-NEXT:    %[[IN:.+]] = mhlo.copy %arg0 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,8]{1,0}"}
// CHECK-NOT:     mhlo.copy
// CHECK:         %[[OUT:.+]]:2 = stablehlo.while(%iterArg = %c, %iterArg_2 = %[[IN]])
// CHECK-SAME:      xla_shape = "(s32[], f32[4,8]{1,0})"
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.while(%iterArg_3 = %c, %iterArg_4 = %iterArg_2)
// CHECK-SAME:      xla_shape = "(s32[], f32[4,8]{1,0})"
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.sine %iterArg_4
// CHECK-SAME:      xla_shape = "f32[4,8]{1,0}"
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.multiply
// CHECK-SAME:      xla_shape = "f32[4,8]{1,0}"
// CHECK-NEXT:    stablehlo.add
// CHECK-NEXT:    stablehlo.return
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[R:.+]] = mhlo.copy %[[OUT]]#1 {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,8]{0,1}"}
// CHECK-NEXT:  return %[[R]]
func.func public @main(%x: tensor<4x8xf32> {mhlo.layout_mode = "{0,1}"}) -> (tensor<4x8xf32> {mhlo.layout_mode = "{0,1}"}) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<3> : tensor<i32>
  %half = stablehlo.constant dense<5.000000e-01> : tensor<4x8xf32>
  %r:2 = stablehlo.while(%i = %c0, %a = %x) : tensor<i32>, tensor<4x8xf32>
  cond {
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %s:2 = stablehlo.while(%j = %c0, %b = %a) : tensor<i32>, tensor<4x8xf32>
    cond {
      %q = stablehlo.compare LT, %j, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %q : tensor<i1>
    } do {
      %e = stablehlo.sine %b : tensor<4x8xf32>
      %j1 = stablehlo.add %j, %c1 : tensor<i32>
      stablehlo.return %j1, %e : tensor<i32>, tensor<4x8xf32>
    }
    %m = stablehlo.multiply %s#1, %half : tensor<4x8xf32>
    %i1 = stablehlo.add %i, %c1 : tensor<i32>
    stablehlo.return %i1, %m : tensor<i32>, tensor<4x8xf32>
  }
  return %r#1 : tensor<4x8xf32>
}
