// A tiled entry layout (TPU-style "{1,0:T(8,128)}") is compared by its
// minor_to_major alone, as XLA compares layouts, and written back as given:
// the tiling is never dropped.
// RUN: stablehlo-layout assign %s | FileCheck %s
// RUN: stablehlo-layout assign %s | stablehlo-layout assign - | FileCheck %s
// RUN: stablehlo-layout explain %s | FileCheck %s --check-prefix=WHY

// CHECK:      mhlo.xla_entry_computation_parameter_layouts = [dense<[1, 0]> : tensor<2xindex>]
// CHECK:      func.func public @main(%arg0: tensor<16x128xf32> {mhlo.layout_mode = "{1,0:T(8,128)}"})
// CHECK-SAME:     -> (tensor<128x16xf32> {mhlo.layout_mode = "{1,0:T(8,128)}"})
// CHECK:      mhlo.copy %arg0 {result_layout = dense<[0, 1]> : tensor<2xindex>
// CHECK-NOT:  mhlo.copy
// WHY: copy #1: f32[16,128] {1,0} -> {0,1}
// WHY: summary: 1 copy
func.func public @main(%x: tensor<16x128xf32> {mhlo.layout_mode = "{1,0:T(8,128)}"})
    -> (tensor<128x16xf32> {mhlo.layout_mode = "{1,0:T(8,128)}"}) {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<16x128xf32>) -> tensor<128x16xf32>
  %n = stablehlo.negate %t : tensor<128x16xf32>
  return %n : tensor<128x16xf32>
}
