// RUN: stablehlo-layout assign --target generic %s | FileCheck %s
// RUN: stablehlo-layout assign --target generic %s | FileCheck %s --check-prefix=COUNT

// A producer has exactly one layout; each consumer has its own operand
// constraint; a consumer whose constraint differs from the producer's final
// layout is served by a copy on its edge (XLA §7.2, XLA §8.1).  XLA's pass
// makes one copy per mismatching use (XLA §13.17) and leaves merging to later
// CSE; this tool's contract (DESIGN §4) is one copy per (value, layout),
// shared by every consumer that needs that layout.
//
// The consumers are broadcasts whose results are pinned: each broadcast output
// takes its result's layout (soft demand, XLA §3.4), and a broadcast forces its
// operand to the output layout filtered to the broadcast dims (mandatory,
// BFS, XLA §3.2): result {2,1,0} -> operand {1,0}; result {1,2,0} -> operand
// {0,1}.  The producers %0/%3 (negates of "auto" parameters) are unconstrained
// until the first of those operand demands is processed: the result leaves
// are pushed in order and drained LIFO (XLA §3.1), so the *last* consumer of each
// value asks first and wins; the others' non-mandatory requests at equal
// priority are refused (XLA §1.6), and the producer's own layout is refused by
// their existing mandatory operand constraints.
//
// Two consumers of %0: the second wants {0,1} and wins; the first gets one
//   copy of %0 to {1,0}.
// Three consumers of %3: the third wants {0,1} and wins; the first two both
//   want {1,0}: one copy, shared by both.
// The parameters follow their negate and are written back as "{0,1}".

// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen}
// CHECK-SAME:    %arg1: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen}
// CHECK-NEXT:    %[[V1:.+]] = stablehlo.negate %arg0
// CHECK-SAME:      xla_shape = "f32[4,6]{0,1}"
// CHECK-NEXT:    %[[C1:.+]] = mhlo.copy %[[V1]]
// CHECK-SAME:      result_layout = dense<[1, 0]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[4,6]{1,0}"
// CHECK-NEXT:    stablehlo.broadcast_in_dim %[[C1]], dims = [1, 2]
// CHECK-SAME:      xla_shape = "f32[2,4,6]{2,1,0}"
// CHECK-NEXT:    stablehlo.broadcast_in_dim %[[V1]], dims = [1, 2]
// CHECK-SAME:      xla_shape = "f32[2,4,6]{1,2,0}"
// CHECK-NEXT:    %[[V2:.+]] = stablehlo.negate %arg1
// CHECK-SAME:      xla_shape = "f32[4,6]{0,1}"
// CHECK-NEXT:    %[[C2:.+]] = mhlo.copy %[[V2]]
// CHECK-SAME:      xla_shape = "f32[4,6]{1,0}"
// CHECK-NEXT:    stablehlo.broadcast_in_dim %[[C2]], dims = [1, 2]
// CHECK-SAME:      xla_shape = "f32[2,4,6]{2,1,0}"
// CHECK-NEXT:    stablehlo.broadcast_in_dim %[[C2]], dims = [1, 2]
// CHECK-SAME:      xla_shape = "f32[2,4,6]{2,1,0}"
// CHECK-NEXT:    stablehlo.broadcast_in_dim %[[V2]], dims = [1, 2]
// CHECK-SAME:      xla_shape = "f32[2,4,6]{1,2,0}"
// CHECK-NEXT:    return

// Exactly two copies in the whole module: one per (value, layout).
// COUNT-COUNT-2: mhlo.copy
// COUNT-NOT:     mhlo.copy
func.func public @main(%x1: tensor<4x6xf32> {mhlo.layout_mode = "auto"},
                       %x2: tensor<4x6xf32> {mhlo.layout_mode = "auto"})
    -> (tensor<2x4x6xf32> {mhlo.layout_mode = "{2,1,0}"}, tensor<2x4x6xf32> {mhlo.layout_mode = "{1,2,0}"},
        tensor<2x4x6xf32> {mhlo.layout_mode = "{2,1,0}"}, tensor<2x4x6xf32> {mhlo.layout_mode = "{2,1,0}"},
        tensor<2x4x6xf32> {mhlo.layout_mode = "{1,2,0}"}) {
  %0 = stablehlo.negate %x1 : tensor<4x6xf32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [1, 2] : (tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %2 = stablehlo.broadcast_in_dim %0, dims = [1, 2] : (tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %3 = stablehlo.negate %x2 : tensor<4x6xf32>
  %4 = stablehlo.broadcast_in_dim %3, dims = [1, 2] : (tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %5 = stablehlo.broadcast_in_dim %3, dims = [1, 2] : (tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %6 = stablehlo.broadcast_in_dim %3, dims = [1, 2] : (tensor<4x6xf32>) -> tensor<2x4x6xf32>
  return %1, %2, %4, %5, %6 : tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>
}
