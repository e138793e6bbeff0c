// RUN: stablehlo-layout assign --target generic %s | FileCheck %s

// Reshape can change layout.  XLA derives the layout that makes it a bitcast
// with ShapeUtil::AlignLayouts, in both directions, non-mandatory (reference
// XLA §5.1 step 2, XLA §5.2 step 3, XLA §5.5).  When no bitcast layout exists, nothing is
// derived and the reshape simply becomes a physical relayout; layout assignment
// inserts no copy for it (XLA §5.3, XLA §5.4).  All results are "auto" so the pinned
// parameters drive everything forward.
//
// %arg0 f32[4,6]{0,1} -> 4x2x3: common-factor groups ([4]<->[4], [6]<->[2,3]);
//   walking the input minor-to-major emits out dim 0, then the group {1,2}
//   from last to first: {0,2,1}.  Bitcast, no copy.
// %arg1 f32[4,6]{0,1} -> 24: the output is rank 1 (XLA never derives or
//   propagates rank <= 1 constraints, XLA §13.1); it gets {0}, the operand keeps
//   {0,1}: the reshape is physical.  No copy.
// %arg2 f32[4,6]{0,1} -> 2x12: one common-factor group [4,6]<->[2,12], but the
//   input group is not laid out row-major (dim 1 is major), so AlignLayouts
//   fails; the output gets the default {1,0}.  Backwards, the aligned operand
//   layout {1,0} is only a non-mandatory request and the operand constraint
//   {0,1} already exists (first writer wins, XLA §1.6): physical reshape, no copy.
// %arg3 f32[4,6]{1,0} -> 4x1x6: AlignLayouts drops the size-1 dim, aligns
//   ({1,0} -> out dims {2,0}) and appends size-1 output dims as most major in
//   descending order: {2,0,1} (not the default {2,1,0}).
// %arg4 f32[4,6]{0,1} -> 4x1x6x1: aligned {0,2}, size-1 dims 3 then 1 appended:
//   {0,2,3,1}.

// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"}
// CHECK-SAME:    %arg3: tensor<4x6xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-SAME:    -> (tensor<4x2x3xf32> {mhlo.layout_mode = "{0,2,1}", stablehlo_layout.chosen}, tensor<24xf32> {mhlo.layout_mode = "{0}", stablehlo_layout.chosen}, tensor<2x12xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen}, tensor<4x1x6xf32> {mhlo.layout_mode = "{2,0,1}", stablehlo_layout.chosen}, tensor<4x1x6x1xf32> {mhlo.layout_mode = "{0,2,3,1}", stablehlo_layout.chosen})
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.reshape %arg0
// CHECK-SAME:      result_layout = dense<[0, 2, 1]> : tensor<3xindex>
// CHECK-SAME:      xla_shape = "f32[4,2,3]{0,2,1}"
// CHECK-NEXT:    stablehlo.reshape %arg1
// CHECK-SAME:      result_layout = dense<0> : tensor<1xindex>
// CHECK-SAME:      xla_shape = "f32[24]{0}"
// CHECK-NEXT:    stablehlo.reshape %arg2
// CHECK-SAME:      result_layout = dense<[1, 0]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[2,12]{1,0}"
// CHECK-NEXT:    stablehlo.reshape %arg3
// CHECK-SAME:      result_layout = dense<[2, 0, 1]> : tensor<3xindex>
// CHECK-SAME:      xla_shape = "f32[4,1,6]{2,0,1}"
// CHECK-NEXT:    stablehlo.reshape %arg4
// CHECK-SAME:      result_layout = dense<[0, 2, 3, 1]> : tensor<4xindex>
// CHECK-SAME:      xla_shape = "f32[4,1,6,1]{0,2,3,1}"
// CHECK-NOT:     mhlo.copy
// CHECK:         return
func.func public @main(%a: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"},
                       %b: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"},
                       %c: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"},
                       %d: tensor<4x6xf32>,
                       %e: tensor<4x6xf32> {mhlo.layout_mode = "{0,1}"})
    -> (tensor<4x2x3xf32> {mhlo.layout_mode = "auto"}, tensor<24xf32> {mhlo.layout_mode = "auto"},
        tensor<2x12xf32> {mhlo.layout_mode = "auto"}, tensor<4x1x6xf32> {mhlo.layout_mode = "auto"},
        tensor<4x1x6x1xf32> {mhlo.layout_mode = "auto"}) {
  %0 = stablehlo.reshape %a : (tensor<4x6xf32>) -> tensor<4x2x3xf32>
  %1 = stablehlo.reshape %b : (tensor<4x6xf32>) -> tensor<24xf32>
  %2 = stablehlo.reshape %c : (tensor<4x6xf32>) -> tensor<2x12xf32>
  %3 = stablehlo.reshape %d : (tensor<4x6xf32>) -> tensor<4x1x6xf32>
  %4 = stablehlo.reshape %e : (tensor<4x6xf32>) -> tensor<4x1x6x1xf32>
  return %0, %1, %2, %3, %4 : tensor<4x2x3xf32>, tensor<24xf32>, tensor<2x12xf32>, tensor<4x1x6xf32>, tensor<4x1x6x1xf32>
}
