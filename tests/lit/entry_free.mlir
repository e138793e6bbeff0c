// RUN: stablehlo-layout assign --target generic %s | FileCheck %s
// RUN: stablehlo-layout assign --target generic --entry-layouts free %s | FileCheck %s --check-prefix=FREE

// Entry layouts (DESIGN §5; XLA §2.1, XLA §8.5, XLA §12.2, XLA §13.9).
// - An unannotated parameter/result is pinned to the default layout with
//   --entry-layouts default (what PJRT does) and left unset with "free".
// - mhlo.layout_mode = "default" pins the default layout in both modes;
//   "auto" leaves that leaf unset in both modes; a layout string pins it.
// - A pinned parameter is a mandatory buffer constraint.  A pinned result is
//   only a soft use demand during propagation, enforced by a root copy, and
//   only when *every* result leaf has a layout (here all results are
//   annotated, so in both runs the entry result layout is fully set).
// - Unset leaves get the propagated layout written back, marked
//   stablehlo_layout.chosen so that a rerun leaves them open again.
//
// Each transpose's result is pinned {1,0}, so its operand is asked for the
// bitcast layout {0,1} (XLA §5.1):
//   %arg0 (unannotated): default mode -> pinned {1,0}, copy to {0,1};
//                        free mode    -> free, takes {0,1}, written back.
//   %arg1 ("default"):   pinned {1,0} in both modes -> copy to {0,1}.
//   %arg2 ("auto"):      free in both modes -> takes {0,1}, no copy.
// %arg3 ("default") is returned as is with result layout "{0,1}": the soft
// demand is refused by the mandatory parameter, so a root copy to {0,1} is
// inserted, in both modes.

// CHECK:       module attributes {mhlo.xla_entry_computation_parameter_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>]
// CHECK-SAME:    mhlo.xla_entry_computation_result_layout = {{\[}}[dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>]]
// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<4x6xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-SAME:    %arg1: tensor<4x6xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-SAME:    %arg2: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen}
// CHECK-SAME:    %arg3: tensor<4x6xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-SAME:    -> (tensor<6x4xf32> {mhlo.layout_mode = "{1,0}"}, tensor<6x4xf32> {mhlo.layout_mode = "{1,0}"}, tensor<6x4xf32> {mhlo.layout_mode = "{1,0}"}, tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"})
// CHECK-DAG:     %[[CA:.+]] = mhlo.copy %arg0 {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,6]{0,1}"}
// CHECK-DAG:     %[[CB:.+]] = mhlo.copy %arg1 {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,6]{0,1}"}
// CHECK-DAG:     %[[CD:.+]] = mhlo.copy %arg3 {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,6]{0,1}"}
// CHECK-NOT:     mhlo.copy
// CHECK:         %[[TA:.+]] = stablehlo.transpose %[[CA]], dims = [1, 0] {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[6,4]{1,0}"}
// CHECK-NEXT:    %[[TB:.+]] = stablehlo.transpose %[[CB]], dims = [1, 0] {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[6,4]{1,0}"}
// CHECK-NEXT:    %[[TC:.+]] = stablehlo.transpose %arg2, dims = [1, 0] {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[6,4]{1,0}"}
// CHECK-NEXT:    return %[[TA]], %[[TB]], %[[TC]], %[[CD]]

// FREE:        module attributes {mhlo.xla_entry_computation_parameter_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>]
// FREE-SAME:     mhlo.xla_entry_computation_result_layout = {{\[}}[dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>]]
// FREE-LABEL:  func.func public @main(
// FREE-SAME:     %arg0: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen}
// FREE-SAME:     %arg1: tensor<4x6xf32> {mhlo.layout_mode = "{1,0}"}
// FREE-SAME:     %arg2: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen}
// FREE-SAME:     %arg3: tensor<4x6xf32> {mhlo.layout_mode = "{1,0}"}
// FREE-SAME:     -> (tensor<6x4xf32> {mhlo.layout_mode = "{1,0}"}, tensor<6x4xf32> {mhlo.layout_mode = "{1,0}"}, tensor<6x4xf32> {mhlo.layout_mode = "{1,0}"}, tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"})
// FREE-DAG:      %[[CB:.+]] = mhlo.copy %arg1 {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,6]{0,1}"}
// FREE-DAG:      %[[CD:.+]] = mhlo.copy %arg3 {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,6]{0,1}"}
// FREE-NOT:      mhlo.copy
// FREE:          %[[TA:.+]] = stablehlo.transpose %arg0, dims = [1, 0] {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[6,4]{1,0}"}
// FREE-NEXT:     %[[TB:.+]] = stablehlo.transpose %[[CB]], dims = [1, 0]
// FREE-NEXT:     %[[TC:.+]] = stablehlo.transpose %arg2, dims = [1, 0]
// FREE-NEXT:     return %[[TA]], %[[TB]], %[[TC]], %[[CD]]
func.func public @main(%a: tensor<4x6xf32>,
                       %b: tensor<4x6xf32> {mhlo.layout_mode = "default"},
                       %c: tensor<4x6xf32> {mhlo.layout_mode = "auto"},
                       %d: tensor<4x6xf32> {mhlo.layout_mode = "default"})
    -> (tensor<6x4xf32> {mhlo.layout_mode = "default"}, tensor<6x4xf32> {mhlo.layout_mode = "default"},
        tensor<6x4xf32> {mhlo.layout_mode = "default"}, tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"}) {
  %ta = stablehlo.transpose %a, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %tb = stablehlo.transpose %b, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %tc = stablehlo.transpose %c, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  return %ta, %tb, %tc, %d : tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<4x6xf32>
}
