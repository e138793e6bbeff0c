// RUN: stablehlo-layout assign --target generic %s | FileCheck %s

// broadcast_in_dim (HLO broadcast) can change layout, but its operand layout is
// a hard function of the output layout: the output minor_to_major filtered to
// the broadcast dimensions, keeping their relative order, renumbered to operand
// dims (GetBroadcastLayoutFromOutput; XLA §5.3, XLA §13.14).  It is imposed
// on the operand as a mandatory operand constraint; nothing flows from the
// operand to the output, which takes its layout from users (here the pinned
// results: a soft demand, XLA §3.4) or the default.
//
// %arg0 4x3 "auto", dims [0,2] -> 4x5x3 with result {0,1,2}: filtered [0,2] ->
//   operand {0,1}.  The parameter is free, so it takes {0,1}: no copy.
// %arg1 4x3 pinned {1,0}, same broadcast and result: the operand must be {0,1},
//   the mandatory parameter cannot change, so one copy of %arg1 to {0,1}.
// %arg2 scalar, dims [] -> 4x3, default result: output {1,0}; rank-0 operand
//   constraints are dropped (XLA §1.6), nothing to copy.
// %arg3 rank 1, dims [1] -> 4x3 with result {0,1}: output {0,1}; the operand
//   has the only rank-1 layout {0} (XLA §13.1).
// %arg4 2x3 "auto", dims [1,2] -> 4x2x3 with result {2,0,1}: filtered [2,1] ->
//   operand {1,0}.

// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<4x3xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen}
// CHECK-SAME:    %arg1: tensor<4x3xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-SAME:    %arg2: tensor<f32> {mhlo.layout_mode = "{}"}
// CHECK-SAME:    %arg3: tensor<3xf32> {mhlo.layout_mode = "{0}"}
// CHECK-SAME:    %arg4: tensor<2x3xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen}
// CHECK-NEXT:    %[[C:.+]] = mhlo.copy %arg1
// CHECK-SAME:      result_layout = dense<[0, 1]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[4,3]{0,1}"
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.broadcast_in_dim %arg0, dims = [0, 2]
// CHECK-SAME:      xla_shape = "f32[4,5,3]{0,1,2}"
// CHECK:         stablehlo.broadcast_in_dim %[[C]], dims = [0, 2]
// CHECK-SAME:      xla_shape = "f32[4,5,3]{0,1,2}"
// CHECK:         stablehlo.broadcast_in_dim %arg2, dims = []
// CHECK-SAME:      result_layout = dense<[1, 0]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[4,3]{1,0}"
// CHECK:         stablehlo.broadcast_in_dim %arg3, dims = [1]
// CHECK-SAME:      xla_shape = "f32[4,3]{0,1}"
// CHECK:         stablehlo.broadcast_in_dim %arg4, dims = [1, 2]
// CHECK-SAME:      result_layout = dense<[2, 0, 1]> : tensor<3xindex>
// CHECK-SAME:      xla_shape = "f32[4,2,3]{2,0,1}"
// CHECK-NOT:     mhlo.copy
// CHECK:         return
func.func public @main(%v: tensor<4x3xf32> {mhlo.layout_mode = "auto"},
                       %w: tensor<4x3xf32>,
                       %s: tensor<f32>,
                       %r: tensor<3xf32>,
                       %z: tensor<2x3xf32> {mhlo.layout_mode = "auto"})
    -> (tensor<4x5x3xf32> {mhlo.layout_mode = "{0,1,2}"}, tensor<4x5x3xf32> {mhlo.layout_mode = "{0,1,2}"},
        tensor<4x3xf32>, tensor<4x3xf32> {mhlo.layout_mode = "{0,1}"},
        tensor<4x2x3xf32> {mhlo.layout_mode = "{2,0,1}"}) {
  %0 = stablehlo.broadcast_in_dim %v, dims = [0, 2] : (tensor<4x3xf32>) -> tensor<4x5x3xf32>
  %1 = stablehlo.broadcast_in_dim %w, dims = [0, 2] : (tensor<4x3xf32>) -> tensor<4x5x3xf32>
  %2 = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
  %3 = stablehlo.broadcast_in_dim %r, dims = [1] : (tensor<3xf32>) -> tensor<4x3xf32>
  %4 = stablehlo.broadcast_in_dim %z, dims = [1, 2] : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
  return %0, %1, %2, %3, %4 : tensor<4x5x3xf32>, tensor<4x5x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x2x3xf32>
}
