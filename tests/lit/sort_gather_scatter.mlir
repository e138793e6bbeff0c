// RUN: stablehlo-layout assign --target generic %s | FileCheck %s

// sort and scatter cannot change layout (XLA §4): all same-rank operands
// and outputs share one layout (sibling rule, mandatory, XLA §3.3 step 7; for
// multi-output sort every tuple element of the output's rank, XLA §5.3).  gather
// can change layout and has no derivation in either direction (its DFS flag
// is set, but nothing is derived, XLA §5.3), so its operand keeps the producer's
// layout and its output takes the default.  All results are "auto".
//
// sort of %arg0 (pinned {0,1}) alone: output {0,1}, no copy.
// sort of keys %arg1 (pinned {0,1}) and values %arg2 (default {1,0}): the
//   values are added last, propagate first (DFS, XLA §3.1) and force the keys and
//   both outputs to {1,0}; the keys' later non-mandatory offer is refused:
//   one copy of %arg1 to {1,0}; outputs (f32[4,5]{1,0}, s32[4,5]{1,0}).
// gather from %arg3 (pinned {0,1}) with rank-1 indices: no copy, output gets
//   the default {1,0} (not {0,1}).
// scatter into %arg5 (pinned {0,1}) with indices %arg6 s32[2,1] (default) and
//   updates %arg7 (pinned {0,1}): the updates propagate first and force every
//   rank-2 operand, including the rank-2 indices, and the output to {0,1}.
//   The indices need one copy to {0,1}: XLA compares minor_to_major exactly,
//   even though {1,0} and {0,1} of a [2,1] array are the same bytes (XLA §13.2).

// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    -> (tensor<4x5xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen}, tensor<4x5xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen}, tensor<4x5xi32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen}, tensor<3x4xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen}, tensor<5x4xi32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen})
// CHECK-DAG:     %[[CK:.+]] = mhlo.copy %arg1 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,5]{1,0}"}
// CHECK-DAG:     %[[CI:.+]] = mhlo.copy %arg6 {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "s32[2,1]{0,1}"}
// CHECK-NOT:     mhlo.copy
// CHECK:         "stablehlo.sort"(%arg0)
// CHECK:         result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,5]{0,1}"
// CHECK:         "stablehlo.sort"(%[[CK]], %arg2)
// CHECK:         xla_shape = "(f32[4,5]{1,0}, s32[4,5]{1,0})"
// CHECK:         "stablehlo.gather"(%arg3, %arg4)
// CHECK-SAME:      result_layout = dense<[1, 0]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[3,4]{1,0}"
// CHECK:         "stablehlo.scatter"(%arg5, %[[CI]], %arg7)
// CHECK:         result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "s32[5,4]{0,1}"
// CHECK-NOT:     mhlo.copy
// CHECK:         return
func.func public @main(%s1: tensor<4x5xf32> {mhlo.layout_mode = "{0,1}"},
                       %k: tensor<4x5xf32> {mhlo.layout_mode = "{0,1}"}, %v: tensor<4x5xi32>,
                       %g: tensor<5x4xf32> {mhlo.layout_mode = "{0,1}"}, %gi: tensor<3xi32>,
                       %si: tensor<5x4xi32> {mhlo.layout_mode = "{0,1}"}, %sidx: tensor<2x1xi32>,
                       %supd: tensor<2x4xi32> {mhlo.layout_mode = "{0,1}"})
    -> (tensor<4x5xf32> {mhlo.layout_mode = "auto"}, tensor<4x5xf32> {mhlo.layout_mode = "auto"},
        tensor<4x5xi32> {mhlo.layout_mode = "auto"}, tensor<3x4xf32> {mhlo.layout_mode = "auto"},
        tensor<5x4xi32> {mhlo.layout_mode = "auto"}) {
  %0 = "stablehlo.sort"(%s1) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %1:2 = "stablehlo.sort"(%k, %v) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
    %e = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %e : tensor<i1>
  }) : (tensor<4x5xf32>, tensor<4x5xi32>) -> (tensor<4x5xf32>, tensor<4x5xi32>)
  %2 = "stablehlo.gather"(%g, %gi) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 4>}>
      : (tensor<5x4xf32>, tensor<3xi32>) -> tensor<3x4xf32>
  %3 = "stablehlo.scatter"(%si, %sidx, %supd) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
  ^bb0(%x: tensor<i32>, %y: tensor<i32>):
    %z = stablehlo.add %x, %y : tensor<i32>
    stablehlo.return %z : tensor<i32>
  }) : (tensor<5x4xi32>, tensor<2x1xi32>, tensor<2x4xi32>) -> tensor<5x4xi32>
  return %0, %1#0, %1#1, %2, %3 : tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xi32>, tensor<3x4xf32>, tensor<5x4xi32>
}
