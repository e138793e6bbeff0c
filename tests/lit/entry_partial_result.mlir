// RUN: stablehlo-layout assign --target generic %s | FileCheck %s

// A partially specified entry result layout never forces a root copy
// (XLA §8.1 "Root handling", XLA §8.5, XLA §13.9).  XLA's AssignLayouts copies
// the root only when ResultLayout()->LayoutIsSet(), which for a tuple result
// requires every leaf to have a layout.  An "auto" result leaves its leaf unset
// (XLA §12.2); with a layout given, the entry constraint has kGivenPriority and
// CalculateComputationLayout does not fill the open leaf in (XLA §8.5: "If a layout
// was given (priority 3), nothing is overwritten").  The set leaf is still a
// soft use demand during propagation (XLA §2.3, XLA §3.4), and at the end
// PropagateComputationLayouts replaces the not-fully-set result layout with the
// computed one (XLA §8.5).
//
// Result 0 returns %arg0 (pinned to the default {1,0}) with layout "{0,1}":
// its soft demand is refused by the mandatory parameter, and as result 1 is
// "auto" the result layout is partial: no root copy; the written-back layout of
// result 0 is the computed {1,0}.  Result 1 (transpose of the "auto" %arg1,
// which gets the default {1,0} from the default loop) is the bitcast {0,1}.

// CHECK:       module attributes {mhlo.xla_entry_computation_parameter_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>]
// CHECK-SAME:    mhlo.xla_entry_computation_result_layout = {{\[}}[dense<[1, 0]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>]]
// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<4x6xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-SAME:    %arg1: tensor<4x6xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen}
// CHECK-SAME:    -> (tensor<4x6xf32> {mhlo.layout_mode = "{1,0}"}, tensor<6x4xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen})
// CHECK-NOT:     mhlo.copy
// CHECK:         %[[T:.+]] = stablehlo.transpose %arg1, dims = [1, 0]
// CHECK-SAME:      xla_shape = "f32[6,4]{0,1}"
// CHECK-NEXT:    return %arg0, %[[T]]
func.func public @main(%a: tensor<4x6xf32> {mhlo.layout_mode = "default"},
                       %b: tensor<4x6xf32> {mhlo.layout_mode = "auto"})
    -> (tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"}, tensor<6x4xf32> {mhlo.layout_mode = "auto"}) {
  %t = stablehlo.transpose %b, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  return %a, %t : tensor<4x6xf32>, tensor<6x4xf32>
}
