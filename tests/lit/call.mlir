// RUN: stablehlo-layout assign --target generic %s | FileCheck %s

// func.call is HLO's kCall.  Computations are laid out callee-first (post
// order, XLA §9.1).  A non-entry computation's parameters ignore any
// layout they had and are unconstrained in round 0 (XLA §13.11), so the callee
// picks its own interface from its body and the default loop: the lowest
// buffer id, the parameter, gets the default {1,0} first (XLA §7.1), and the body
// follows.  The caller then forces each call operand and the call result to
// the callee's recorded layouts, mandatory (XLA §2.2, XLA §9.4); a caller value with
// another layout gets a copy at the call site.  Round 1 re-runs with that
// interface pinned and changes nothing.
//
// @f: parameter {1,0}; transpose [1,0] makes itself a bitcast: result {0,1}.
// @g: parameter {1,0}; negate follows: result {1,0}.
// @main, call @f(%arg0 pinned {0,1}): copy %arg0 to {1,0} before the call; the
//   call result is {0,1} (mandatory) and the entry result is pinned {1,0}:
//   the soft result demand is refused, so a root copy to {1,0} follows the
//   call.
// @g is called twice: with %arg1 (pinned {0,1}): one copy to {1,0}; with
//   %arg2 (default {1,0}): no copy.  Both call results are {1,0} as pinned.

// CHECK-LABEL: func.func private @f(%arg0: tensor<4x6xf32>) -> tensor<6x4xf32> {
// CHECK-NEXT:    stablehlo.transpose %arg0, dims = [1, 0]
// CHECK-SAME:      result_layout = dense<[0, 1]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[6,4]{0,1}"
// CHECK-NEXT:    return

// CHECK-LABEL: func.func private @g(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32> {
// CHECK-NEXT:    stablehlo.negate %arg0
// CHECK-SAME:      xla_shape = "f32[4,6]{1,0}"
// CHECK-NEXT:    return

// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"}
// CHECK-SAME:    %arg1: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"}
// CHECK-SAME:    %arg2: tensor<4x6xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-SAME:    -> (tensor<6x4xf32> {mhlo.layout_mode = "{1,0}"}, tensor<4x6xf32> {mhlo.layout_mode = "{1,0}"}, tensor<4x6xf32> {mhlo.layout_mode = "{1,0}"})
// CHECK-DAG:     %[[CX:.+]] = mhlo.copy %arg0 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,6]{1,0}"}
// CHECK-DAG:     %[[CY:.+]] = mhlo.copy %arg1 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,6]{1,0}"}
// CHECK-NOT:     mhlo.copy
// CHECK:         %[[F:.+]] = call @f(%[[CX]])
// CHECK-SAME:      xla_shape = "f32[6,4]{0,1}"
// CHECK-NEXT:    %[[RF:.+]] = mhlo.copy %[[F]]
// CHECK-SAME:      result_layout = dense<[1, 0]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[6,4]{1,0}"
// CHECK-NEXT:    %[[G1:.+]] = call @g(%[[CY]])
// CHECK-SAME:      xla_shape = "f32[4,6]{1,0}"
// CHECK-NEXT:    %[[G2:.+]] = call @g(%arg2)
// CHECK-SAME:      xla_shape = "f32[4,6]{1,0}"
// CHECK-NEXT:    return %[[RF]], %[[G1]], %[[G2]]
func.func private @f(%a: tensor<4x6xf32>) -> tensor<6x4xf32> {
  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
}

func.func private @g(%a: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %0 = stablehlo.negate %a : tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

func.func public @main(%x: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"},
                       %y: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"},
                       %z: tensor<4x6xf32>)
    -> (tensor<6x4xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %0 = func.call @f(%x) : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %1 = func.call @g(%y) : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %2 = func.call @g(%z) : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %0, %1, %2 : tensor<6x4xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}
