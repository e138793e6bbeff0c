// RUN: stablehlo-layout assign --target generic %s | FileCheck %s

// dynamic_update_slice cannot change layout (XLA §4), and XLA lets
// operand 0 decide it: a non-mandatory demand on operand >= 1 is downgraded to
// BFS at priority - 1 (SetOperandLayout, XLA §2.8; XLA §5.3).
//
// %arg0 (operand 0) is pinned {0,1}, the update %arg1 is pinned to the default
// {1,0}, the result is "auto".  DFS order processes %arg1 first (added last,
// XLA §3.1); its demand on operand 1 is downgraded and goes to the back of the
// deque.  %arg0's demand on operand 0 is processed next: the sibling rule
// forces operand 1 to {0,1} (mandatory, priority 0 >= -1, so it replaces the
// downgraded constraint) and the output to {0,1}.  Result: the DUS is {0,1},
// the only copy is of the update %arg1 to {0,1}, and the result is "{0,1}".
// (The queued, downgraded constraint is the same slot that was replaced: when
// it is popped it propagates the replacement, not its old {1,0}.)

// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<8x6xf32> {mhlo.layout_mode = "{0,1}"}
// CHECK-SAME:    %arg1: tensor<2x3xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-SAME:    -> (tensor<8x6xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen})
// CHECK-NEXT:    %[[CU:.+]] = mhlo.copy %arg1
// CHECK-SAME:      result_layout = dense<[0, 1]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[2,3]{0,1}"
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.dynamic_update_slice %arg0, %[[CU]], %arg2, %arg3
// CHECK-SAME:      result_layout = dense<[0, 1]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[8,6]{0,1}"
// CHECK-NOT:     mhlo.copy
// CHECK:         return
func.func public @main(%op0: tensor<8x6xf32> {mhlo.layout_mode = "{0,1}"}, %upd: tensor<2x3xf32>,
                       %i: tensor<i32>, %j: tensor<i32>) -> (tensor<8x6xf32> {mhlo.layout_mode = "auto"}) {
  %0 = stablehlo.dynamic_update_slice %op0, %upd, %i, %j
      : (tensor<8x6xf32>, tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}
