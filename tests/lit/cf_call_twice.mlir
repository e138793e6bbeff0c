// RUN: stablehlo-layout assign --target generic %s | FileCheck %s --check-prefix=GEN
// RUN: stablehlo-layout assign --target xla-cpu %s | FileCheck %s --check-prefix=CPU

// @f (a transpose) is called twice, once on a column-major and once on a
// row-major pinned parameter; the first result is pinned row-major, the second
// column-major.
//
// generic (XLA's base pass): callees first (XLA §9.1).  @f's parameter ignores its
// callers in round 0 (XLA §13.11) and the default loop gives it {1,0} (XLA §7.1); the
// transpose follows through the bitcast rule, mandatory (XLA §5.3): @f returns
// {0,1}.  The callers adapt at the call sites (XLA §2.2 call rule, XLA §9.4): %arg0 is
// copied to {1,0} before the first call, whose {0,1} result is copied to the
// pinned {1,0} at the return (a soft result demand, XLA §3.4).  The second call
// needs nothing: {1,0} in, {0,1} out, as pinned.  One @f.
//
// xla-cpu: XLA:CPU inlines both calls first, so each site is laid out in its
// own context.  The transpose reads its operand row-major (XLA §10): the
// column-major %arg0 is copied to {1,0} inside the first site's clone; both
// transposes yield {0,1}.  The first result still needs the root copy to
// {1,0}.  The two clones differ (one has a copy), so the second is named
// @f.layout1.
//
// Cross-checked for xla-cpu against XLA's after-dump of this module: a copy of
// the first parameter to {1,0}, transposes {0,1}, one root copy to {1,0}.

// GEN-LABEL: func.func public @main(
// GEN-SAME:    %arg0: tensor<4x8xf32> {mhlo.layout_mode = "{0,1}"}
// GEN-SAME:    %arg1: tensor<4x8xf32> {mhlo.layout_mode = "{1,0}"}
// GEN-SAME:    -> (tensor<8x4xf32> {mhlo.layout_mode = "{1,0}"}, tensor<8x4xf32> {mhlo.layout_mode = "{0,1}"})
// GEN-NEXT:    %[[A:.+]] = mhlo.copy %arg0 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,8]{1,0}"}
// GEN-NEXT:    %[[R0:.+]] = call @f(%[[A]])
// GEN-SAME:      xla_shape = "f32[8,4]{0,1}"
// GEN-NEXT:    %[[R0C:.+]] = mhlo.copy %[[R0]] {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[8,4]{1,0}"}
// GEN-NEXT:    %[[R1:.+]] = call @f(%arg1)
// GEN-SAME:      xla_shape = "f32[8,4]{0,1}"
// GEN-NEXT:    return %[[R0C]], %[[R1]]
// GEN-LABEL: func.func private @f(
// GEN-NEXT:    stablehlo.transpose %arg0, dims = [1, 0]
// GEN-SAME:      xla_shape = "f32[8,4]{0,1}"
// GEN-NEXT:    return
// GEN-NOT:   func.func private @f.layout

// CPU-LABEL: func.func public @main(
// CPU-NEXT:    %[[R0:.+]] = call @f(%arg0)
// CPU-SAME:      xla_shape = "f32[8,4]{0,1}"
// CPU-NEXT:    %[[R0C:.+]] = mhlo.copy %[[R0]] {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[8,4]{1,0}"}
// CPU-NEXT:    %[[R1:.+]] = call @f.layout1(%arg1)
// CPU-SAME:      xla_shape = "f32[8,4]{0,1}"
// CPU-NEXT:    return %[[R0C]], %[[R1]]
// CPU-LABEL: func.func private @f(
// CPU-NEXT:    %[[C:.+]] = mhlo.copy %arg0 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,8]{1,0}"}
// CPU-NEXT:    stablehlo.transpose %[[C]], dims = [1, 0]
// CPU-SAME:      xla_shape = "f32[8,4]{0,1}"
// CPU-NEXT:    return
// CPU-LABEL: func.func private @f.layout1(
// CPU-NEXT:    stablehlo.transpose %arg0, dims = [1, 0]
// CPU-SAME:      xla_shape = "f32[8,4]{0,1}"
// CPU-NEXT:    return
func.func public @main(%a: tensor<4x8xf32> {mhlo.layout_mode = "{0,1}"}, %b: tensor<4x8xf32> {mhlo.layout_mode = "{1,0}"})
    -> (tensor<8x4xf32> {mhlo.layout_mode = "{1,0}"}, tensor<8x4xf32> {mhlo.layout_mode = "{0,1}"}) {
  %0 = call @f(%a) : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %1 = call @f(%b) : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<8x4xf32>
}
func.func private @f(%v: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.transpose %v, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
