// RUN: stablehlo-layout assign --target xla-gpu --entry-layouts free %s | FileCheck %s
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_ragged_all_to_all.mlir | FileCheck %s --check-prefix=RAGGED

// Rule (reference §11.7, target:gpu-collective-dim-major): XLA:GPU runs
// all-gather, reduce-scatter and all-to-all only with the gathered /
// scattered / split dimension most major: the result takes its existing
// (default) layout with that dimension moved most major, mandatory; these
// ops cannot change layout, so the operand follows.  All entry layouts are
// free here, so the parameters simply take those layouts.
//
// all_gather dim 1 of [8,64]: {1,0} -> {0,1}.
// reduce_scatter dim 2 of [4,8,4]: {2,1,0} -> {1,0,2}.
// all_to_all split dim 1 of [32,4,4]: {2,1,0} -> {2,0,1}.
// CHECK-LABEL: func.func public @main
// CHECK-SAME:    %arg0: tensor<8x16xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen}
// CHECK-SAME:    %arg1: tensor<4x8x16xf32> {mhlo.layout_mode = "{1,0,2}", stablehlo_layout.chosen}
// CHECK-SAME:    %arg2: tensor<8x16x4xf32> {mhlo.layout_mode = "{2,0,1}", stablehlo_layout.chosen}
// CHECK-NOT:     mhlo.copy
// CHECK:         "stablehlo.all_gather"(%arg0)
// CHECK-SAME:      xla_shape = "f32[8,64]{0,1}"
// CHECK:         "stablehlo.reduce_scatter"(%arg1)
// CHECK:         xla_shape = "f32[4,8,4]{1,0,2}"
// CHECK:         "stablehlo.all_to_all"(%arg2)
// CHECK-SAME:      xla_shape = "f32[32,4,4]{2,0,1}"
// CHECK-NOT:     mhlo.copy
func.func public @main(%x: tensor<8x16xf32>, %y: tensor<4x8x16xf32>, %z: tensor<8x16x4xf32>) -> (tensor<8x64xf32>, tensor<4x8x4xf32>, tensor<32x4x4xf32>) {
  %0 = "stablehlo.all_gather"(%x) <{all_gather_dim = 1 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> : (tensor<8x16xf32>) -> tensor<8x64xf32>
  %1 = "stablehlo.reduce_scatter"(%y) <{scatter_dimension = 2 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4x8x16xf32>) -> tensor<4x8x4xf32>
  %2 = "stablehlo.all_to_all"(%z) <{split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 4 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> : (tensor<8x16x4xf32>) -> tensor<32x4x4xf32>
  return %0, %1, %2 : tensor<8x64xf32>, tensor<4x8x4xf32>, tensor<32x4x4xf32>
}

// XLA's RaggedAllToAllLayoutSetRaggedDimToMajor as JAX writes it (custom_call
// @ragged_all_to_all): dim 0 goes most major in the result's existing
// layout, which in XLA:GPU's module before layout assignment is the default
// (the pinned entry layouts live only in the entry computation layout), so
// {2,1,0}.  The op cannot change layout, so input and output buffer operands
// both read {2,1,0} (two copies of the pinned parameters), and the result is
// copied back to the pinned {0,1,2}.  (XLA's unit test writes the layouts on
// the instructions themselves: tests/unit/xla_gpu_scenarios.)
// RAGGED-LABEL: func.func public @main
// RAGGED-DAG:     %[[I:.+]] = mhlo.copy %arg0 {{.*}}xla_shape = "f32[16,4,8]{2,1,0}"
// RAGGED-DAG:     %[[O:.+]] = mhlo.copy %arg1 {{.*}}xla_shape = "f32[32,4,8]{2,1,0}"
// RAGGED:         %[[R:.+]] = stablehlo.custom_call @ragged_all_to_all(%[[I]], %[[O]],
// RAGGED-SAME:      xla_shape = "f32[32,4,8]{2,1,0}"
// RAGGED:         mhlo.copy %[[R]]
// RAGGED-SAME:      xla_shape = "f32[32,4,8]{0,1,2}"
