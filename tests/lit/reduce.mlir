// RUN: stablehlo-layout assign --target generic %s | FileCheck %s

// Reduce can change layout.  In the base pass (no backend) nothing is derived
// from the output for its operand (PropagateReductionLayoutToOperand is false,
// XLA §5.1 step 4), and nothing is derived from an operand for the
// output: an operand constraint on a reduce only runs the sibling rule (all
// same-rank reduce operands share one layout, mandatory) and then returns
// (XLA §3.3 step 7, XLA §5.3).  So a reduce output gets its layout from its users or,
// as here where the results are "auto", from the default-layout loop (XLA §7.1):
// {1,0}, regardless of the column-major input.  The reduce's operand
// constraints equal the producer's layout, so no copy is inserted.
//
// %arg0 f32[2,3,4]{0,1,2}, reduce dims [1]   -> f32[2,4]{1,0}, not {0,1}.
// %arg1 f32[2,3,4,5]{0,1,2,3}, dims [1,3]    -> f32[2,4]{1,0}.
// Variadic reduce of %arg2 (pinned {0,1,2}) and %arg3 (default {2,1,0}) over
// dims [2]: %arg3 is added last, so it propagates first (DFS, XLA §3.1); its use
// forces the sibling operand 0 to {2,1,0} (mandatory), and %arg2's later
// non-mandatory offer is refused: one copy of %arg2 to {2,1,0}.  The two
// (tuple-element) outputs never accept use constraints and get the default
// layout (XLA §5.3, XLA §13.13): (f32[2,3]{1,0}, s32[2,3]{1,0}).

// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<2x3x4xf32> {mhlo.layout_mode = "{0,1,2}"}
// CHECK-SAME:    %arg1: tensor<2x3x4x5xf32> {mhlo.layout_mode = "{0,1,2,3}"}
// CHECK-SAME:    %arg2: tensor<2x3x4xf32> {mhlo.layout_mode = "{0,1,2}"}
// CHECK-SAME:    %arg3: tensor<2x3x4xi32> {mhlo.layout_mode = "{2,1,0}"}
// CHECK-SAME:    -> (tensor<2x4xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen}, tensor<2x4xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen}, tensor<2x3xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen}, tensor<2x3xi32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen})
// CHECK-NEXT:    %[[C:.+]] = mhlo.copy %arg2
// CHECK-SAME:      result_layout = dense<[2, 1, 0]> : tensor<3xindex>
// CHECK-SAME:      xla_shape = "f32[2,3,4]{2,1,0}"
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.maximum across dimensions = [1]
// CHECK-SAME:      result_layout = dense<[1, 0]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[2,4]{1,0}"
// CHECK:         stablehlo.reduce(%arg1 init: %{{.+}}) applies stablehlo.maximum across dimensions = [1, 3]
// CHECK-SAME:      xla_shape = "f32[2,4]{1,0}"
// CHECK:         stablehlo.reduce(%[[C]] init: %{{.+}}), (%arg3 init: %{{.+}}) across dimensions = [2]
// CHECK-SAME:      xla_shape = "(f32[2,3]{1,0}, s32[2,3]{1,0})"
// CHECK-NOT:     mhlo.copy
// CHECK:         return
func.func public @main(%x: tensor<2x3x4xf32> {mhlo.layout_mode = "{0,1,2}"},
                       %y: tensor<2x3x4x5xf32> {mhlo.layout_mode = "{0,1,2,3}"},
                       %a: tensor<2x3x4xf32> {mhlo.layout_mode = "{0,1,2}"},
                       %b: tensor<2x3x4xi32>)
    -> (tensor<2x4xf32> {mhlo.layout_mode = "auto"}, tensor<2x4xf32> {mhlo.layout_mode = "auto"},
        tensor<2x3xf32> {mhlo.layout_mode = "auto"}, tensor<2x3xi32> {mhlo.layout_mode = "auto"}) {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1]
      : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %1 = stablehlo.reduce(%y init: %ninf) applies stablehlo.maximum across dimensions = [1, 3]
      : (tensor<2x3x4x5xf32>, tensor<f32>) -> tensor<2x4xf32>
  %2:2 = stablehlo.reduce(%a init: %ninf), (%b init: %zero) across dimensions = [2]
      : (tensor<2x3x4xf32>, tensor<2x3x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<2x3xf32>, tensor<2x3xi32>)
    reducer(%p0: tensor<f32>, %q0: tensor<f32>) (%p1: tensor<i32>, %q1: tensor<i32>) {
      %m = stablehlo.maximum %p0, %q0 : tensor<f32>
      %s = stablehlo.add %p1, %q1 : tensor<i32>
      stablehlo.return %m, %s : tensor<f32>, tensor<i32>
    }
  return %0, %1, %2#0, %2#1 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<2x3xi32>
}
