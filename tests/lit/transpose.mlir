// RUN: stablehlo-layout assign --target generic %s | FileCheck %s

// Transpose can change layout, and XLA steers it towards being a bitcast
// (XLA §5.1 step 3, XLA §5.3): from the output layout the operand layout is
//   operand_minor_to_major[i] = dims[output_minor_to_major[i]]
// (non-mandatory, DFS), and from the operand layout the output layout is the
// inverse (mandatory).  All results here are pinned to the default layout, so
// the soft result demand (XLA §3.4) reaches each transpose first and its operand
// is asked for the bitcast layout:
//
//   rank 2, dims [1,0],       out {1,0}     -> operand {0,1}
//   rank 3, dims [2,0,1],     out {2,1,0}   -> operand {1,0,2}
//   rank 4, dims [0,2,3,1],   out {3,2,1,0} -> operand {1,3,2,0}
//   rank 3, dims [1,2,0],     out {2,1,0}   -> operand {0,2,1}
//   rank 4, dims [0,3,1,2],   out {3,2,1,0} -> operand {2,1,3,0}
//
// %arg0..%arg2 are pinned to the default layout (mandatory buffer constraints,
// XLA §2.1), so the operand demand cannot change them: each gets exactly one copy
// to the bitcast layout, and the transpose keeps the default output layout.
// %arg3..%arg5 are "auto" (unset entry layouts, XLA §12.2): the demand is accepted,
// no copy is needed, and the chosen layout is written back into
// mhlo.layout_mode and the module's entry parameter layouts (XLA §8.5).

// CHECK:       module attributes {mhlo.xla_entry_computation_parameter_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<[2, 1, 0]> : tensor<3xindex>, dense<[3, 2, 1, 0]> : tensor<4xindex>, dense<[0, 1]> : tensor<2xindex>, dense<[0, 2, 1]> : tensor<3xindex>, dense<[2, 1, 3, 0]> : tensor<4xindex>]

// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<4x8xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-SAME:    %arg1: tensor<2x3x4xf32> {mhlo.layout_mode = "{2,1,0}"}
// CHECK-SAME:    %arg2: tensor<2x3x4x5xf32> {mhlo.layout_mode = "{3,2,1,0}"}
// CHECK-SAME:    %arg3: tensor<4x8xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen}
// CHECK-SAME:    %arg4: tensor<2x3x4xf32> {mhlo.layout_mode = "{0,2,1}", stablehlo_layout.chosen}
// CHECK-SAME:    %arg5: tensor<2x3x4x5xf32> {mhlo.layout_mode = "{2,1,3,0}", stablehlo_layout.chosen}
// The three pinned parameters are copied at the top of the body.
// CHECK-DAG:     %[[C2:.+]] = mhlo.copy %arg0 {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,8]{0,1}"}
// CHECK-DAG:     %[[C3:.+]] = mhlo.copy %arg1 {result_layout = dense<[1, 0, 2]> : tensor<3xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[2,3,4]{1,0,2}"}
// CHECK-DAG:     %[[C4:.+]] = mhlo.copy %arg2 {result_layout = dense<[1, 3, 2, 0]> : tensor<4xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[2,3,4,5]{1,3,2,0}"}
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.transpose %[[C2]], dims = [1, 0]
// CHECK-SAME:      result_layout = dense<[1, 0]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[8,4]{1,0}"
// CHECK:         stablehlo.transpose %[[C3]], dims = [2, 0, 1]
// CHECK-SAME:      xla_shape = "f32[4,2,3]{2,1,0}"
// CHECK:         stablehlo.transpose %[[C4]], dims = [0, 2, 3, 1]
// CHECK-SAME:      xla_shape = "f32[2,4,5,3]{3,2,1,0}"
// CHECK:         stablehlo.transpose %arg3, dims = [1, 0]
// CHECK-SAME:      xla_shape = "f32[8,4]{1,0}"
// CHECK:         stablehlo.transpose %arg4, dims = [1, 2, 0]
// CHECK-SAME:      xla_shape = "f32[3,4,2]{2,1,0}"
// CHECK:         stablehlo.transpose %arg5, dims = [0, 3, 1, 2]
// CHECK-SAME:      xla_shape = "f32[2,5,3,4]{3,2,1,0}"
// CHECK-NOT:     mhlo.copy
// CHECK:         return
func.func public @main(%a2: tensor<4x8xf32>, %a3: tensor<2x3x4xf32>, %a4: tensor<2x3x4x5xf32>,
                       %b2: tensor<4x8xf32> {mhlo.layout_mode = "auto"},
                       %b3: tensor<2x3x4xf32> {mhlo.layout_mode = "auto"},
                       %b4: tensor<2x3x4x5xf32> {mhlo.layout_mode = "auto"})
    -> (tensor<8x4xf32>, tensor<4x2x3xf32>, tensor<2x4x5x3xf32>,
        tensor<8x4xf32>, tensor<3x4x2xf32>, tensor<2x5x3x4xf32>) {
  %t2 = stablehlo.transpose %a2, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %t3 = stablehlo.transpose %a3, dims = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %t4 = stablehlo.transpose %a4, dims = [0, 2, 3, 1] : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
  %u2 = stablehlo.transpose %b2, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %u3 = stablehlo.transpose %b3, dims = [1, 2, 0] : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %u4 = stablehlo.transpose %b4, dims = [0, 3, 1, 2] : (tensor<2x3x4x5xf32>) -> tensor<2x5x3x4xf32>
  return %t2, %t3, %t4, %u2, %u3, %u4
      : tensor<8x4xf32>, tensor<4x2x3xf32>, tensor<2x4x5x3xf32>,
        tensor<8x4xf32>, tensor<3x4x2xf32>, tensor<2x5x3x4xf32>
}
