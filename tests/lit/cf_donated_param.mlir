// RUN: stablehlo-layout assign --target xla-cpu %s | FileCheck %s --check-prefix=CPU
// RUN: stablehlo-layout assign --target generic %s | FileCheck %s --check-prefix=GEN

// Donated parameters: tf.aliasing_output = k makes parameter i and result k
// one buffer (XLA's input_output_alias).  Both parameters are "auto" (free),
// both results are pinned: result 0 column-major {0,1}, result 1 row-major.
// Each result is the transpose of its aliased parameter.
//
// XLA (XLA §3.7): after each round, for every alias pair that was not pinned on
// both sides, the parameter's buffer layout and the root's buffer layout for
// that result are inferred; if they differ, another round runs, and since the
// parameter was not pinned, BOTH the parameter and the result entry layouts
// are reset to the root's layout.  The parameter thus takes the result's
// layout, at the price of a copy inside.  (XLA resets the result too, even
// when it was pinned; see result 1 on xla-cpu.)
//
// xla-cpu: the transposes read their operands row-major (XLA §10), so after round
//   0 both parameters are {1,0} while both transposes are {0,1} (bitcast rule,
//   mandatory).  Both pairs disagree: both parameters - and result 1 - become
//   {0,1}.  In the extra round the now-pinned {0,1} parameters are copied to
//   {1,0} for the transposes; no root copy is left.  Result 1 was pinned
//   {1,0} and is rewritten to {0,1}: that is what XLA itself does.
// generic: the soft result demands (XLA §3.4) reach the transposes first (the
//   computation constraint is the last DFS constraint added), which then ask
//   for the bitcast operand layouts: after round 0 parameter 0 is {1,0} under
//   a {0,1} root, parameter 1 is {0,1} under a {1,0} root.  Both pairs
//   disagree and each parameter takes its result's (= root's) layout: {0,1}
//   and {1,0}; the transposes keep the result layouts and their operands get
//   one copy each.
//
// Cross-checked for xla-cpu against XLA's after-dump of this module:
// entry_computation_layout={(f32[4,4]{0,1}, f32[4,4]{0,1})->(f32[4,4]{0,1},
// f32[4,4]{0,1})}, one copy per parameter, no root copy.

// CPU:       module attributes {mhlo.xla_entry_computation_parameter_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>], mhlo.xla_entry_computation_result_layout = {{\[\[}}dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>]]}
// CPU-LABEL: func.func public @main(
// CPU-SAME:    %arg0: tensor<4x4xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen, tf.aliasing_output = 0 : i32}
// CPU-SAME:    %arg1: tensor<4x4xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen, tf.aliasing_output = 1 : i32}
// CPU-SAME:    -> (tensor<4x4xf32> {mhlo.layout_mode = "{0,1}"}, tensor<4x4xf32> {mhlo.layout_mode = "{0,1}"})
// CPU-DAG:     %[[X:.+]] = mhlo.copy %arg0 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,4]{1,0}"}
// CPU-DAG:     %[[Z:.+]] = mhlo.copy %arg1 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,4]{1,0}"}
// CPU:         %[[T0:.+]] = stablehlo.transpose %[[X]], dims = [1, 0]
// CPU-SAME:      xla_shape = "f32[4,4]{0,1}"
// CPU-NEXT:    %[[T1:.+]] = stablehlo.transpose %[[Z]], dims = [1, 0]
// CPU-SAME:      xla_shape = "f32[4,4]{0,1}"
// CPU-NEXT:    return %[[T0]], %[[T1]]

// GEN:       module attributes {mhlo.xla_entry_computation_parameter_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>], mhlo.xla_entry_computation_result_layout = {{\[\[}}dense<[0, 1]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>]]}
// GEN-LABEL: func.func public @main(
// GEN-SAME:    %arg0: tensor<4x4xf32> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen, tf.aliasing_output = 0 : i32}
// GEN-SAME:    %arg1: tensor<4x4xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen, tf.aliasing_output = 1 : i32}
// GEN-SAME:    -> (tensor<4x4xf32> {mhlo.layout_mode = "{0,1}"}, tensor<4x4xf32> {mhlo.layout_mode = "{1,0}"})
// GEN-DAG:     %[[X:.+]] = mhlo.copy %arg0 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,4]{1,0}"}
// GEN-DAG:     %[[Z:.+]] = mhlo.copy %arg1 {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,4]{0,1}"}
// GEN:         %[[T0:.+]] = stablehlo.transpose %[[X]], dims = [1, 0]
// GEN-SAME:      xla_shape = "f32[4,4]{0,1}"
// GEN-NEXT:    %[[T1:.+]] = stablehlo.transpose %[[Z]], dims = [1, 0]
// GEN-SAME:      xla_shape = "f32[4,4]{1,0}"
// GEN-NEXT:    return %[[T0]], %[[T1]]
func.func public @main(%x: tensor<4x4xf32> {mhlo.layout_mode = "auto", tf.aliasing_output = 0 : i32},
                       %z: tensor<4x4xf32> {mhlo.layout_mode = "auto", tf.aliasing_output = 1 : i32})
    -> (tensor<4x4xf32> {mhlo.layout_mode = "{0,1}"}, tensor<4x4xf32> {mhlo.layout_mode = "{1,0}"}) {
  %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = stablehlo.transpose %z, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0, %1 : tensor<4x4xf32>, tensor<4x4xf32>
}
