// RUN: stablehlo-layout assign --target xla-cpu %s | FileCheck %s

// A loop whose body transposes its carried value on the way to the yield:
// a <- transpose(sine(a)).  (This is the shape XLA's own simplifier gives
// lax.fori_loop(..., lambda i, c: jnp.sin(c.T) * 2, x); cf_fori_transpose.test
// covers the raw export, which transposes first.)
//
// Round 0 lays the body out alone (XLA §9.1): sine reads the carried value
// row-major (XLA §10), so the body parameter is {1,0}; the transpose's output
// follows its row-major operand through the bitcast rule, mandatory (XLA §5.3):
// the body result is {0,1}.  Parameter and result disagree, so in @main the
// body parameter is reset to the body result and the init operand and the
// while result are constrained to it, mandatory (XLA §2.2 while rule, XLA §9.2).
// Round 1 enforces {0,1} on the body parameter: sine still reads row-major, so
// the copy sits at the top of the body, on sine's operand - not at the yield
// (the back-edge rule, XLA §3.2, only nudges the parameter towards what the yield
// already has).  @main copies the row-major entry parameter to {0,1} before
// the loop and the {0,1} loop result back to the pinned {1,0} at the return.
//
// Cross-checked against XLA (default and raw dumps): exactly these three
// copies - init operand, top of the body, root.

// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<4x4xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-NEXT:    %[[IN:.+]] = mhlo.copy %arg0 {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,4]{0,1}"}
// CHECK-NOT:     mhlo.copy
// CHECK:         %[[W:.+]]:2 = stablehlo.while(%iterArg = %c, %iterArg_2 = %[[IN]])
// CHECK-SAME:      xla_shape = "(s32[], f32[4,4]{0,1})"
// CHECK:         } do {
// CHECK-NEXT:      %[[B:.+]] = mhlo.copy %iterArg_2 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,4]{1,0}"}
// CHECK-NEXT:      %[[S:.+]] = stablehlo.sine %[[B]]
// CHECK-SAME:        xla_shape = "f32[4,4]{1,0}"
// CHECK-NEXT:      %[[T:.+]] = stablehlo.transpose %[[S]], dims = [1, 0]
// CHECK-SAME:        xla_shape = "f32[4,4]{0,1}"
// CHECK-NOT:       mhlo.copy
// CHECK:           stablehlo.return %{{.+}}, %[[T]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[R:.+]] = mhlo.copy %[[W]]#1 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,4]{1,0}"}
// CHECK-NEXT:    return %[[R]]
func.func public @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<3> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %a = %x) : tensor<i32>, tensor<4x4xf32>
  cond {
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %s = stablehlo.sine %a : tensor<4x4xf32>
    %t = stablehlo.transpose %s, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %i1 = stablehlo.add %i, %c1 : tensor<i32>
    stablehlo.return %i1, %t : tensor<i32>, tensor<4x4xf32>
  }
  return %r#1 : tensor<4x4xf32>
}
