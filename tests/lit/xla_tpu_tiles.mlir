// RUN: stablehlo-layout assign --target xla-tpu %s | FileCheck %s
// RUN: stablehlo-layout assign --target xla-tpu --tpu v6e %s | FileCheck %s
// RUN: stablehlo-layout explain --target xla-tpu --tpu v4 %s | FileCheck %s --check-prefix=WHY

// XLA:TPU (docs/XLA.md, TPU part; dumps in tests/unit/xla_tpu_dumps/).  This very
// module compiled by libtpu 0.0.50.1 for v5e, deviceless: Inputs/tpu/xla_tpu_tiles.v5e.after.txt
// (every layout below is the one XLA:TPU gave).
// - xla_shape carries the tiles XLA:TPU prints (target:tpu tiles rule):
//   f32 rows of 8 by 128 lanes; bf16 the same rows packed two to a word;
//   a scalar T(128); a rank-1 f32[300] T(512).
// - an entry array left open gets PJRT's default layout for the TPU, the one
//   that pads least: f32[100,5] is {0,1} (5 rows of 128 lanes, not 100 rows
//   of 128), f32[1000,128] stays row-major.
// - the transpose of that parameter is then a bitcast with no copy.
// CHECK: mhlo.xla_entry_computation_parameter_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]
// CHECK: %arg0: tensor<100x5xf32> {mhlo.layout_mode = "{0,1}"}
// CHECK-NOT: mhlo.copy
// CHECK: stablehlo.transpose %arg0, {{.*}} xla_shape = "f32[5,100]{1,0:T(8,128)}"
// CHECK: stablehlo.convert {{.*}} xla_shape = "bf16[1000,128]{1,0:T(8,128)(2,1)}"
// CHECK: stablehlo.negate {{.*}} xla_shape = "f32[300]{0:T(512)}"
// CHECK: stablehlo.multiply {{.*}} xla_shape = "f32[]{:T(128)}"
// WHY: summary: 0 copies, 0 B moved per execution (target xla-tpu v4, entry layouts default)
func.func public @main(%x: tensor<100x5xf32>, %w: tensor<1000x128xf32>, %v: tensor<300xf32>, %s: tensor<f32>)
    -> (tensor<5x100xf32>, tensor<1000x128xbf16>, tensor<300xf32>, tensor<f32>) {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<100x5xf32>) -> tensor<5x100xf32>
  %c = stablehlo.convert %w : (tensor<1000x128xf32>) -> tensor<1000x128xbf16>
  %n = stablehlo.negate %v : tensor<300xf32>
  %m = stablehlo.multiply %s, %s : tensor<f32>
  return %t, %c, %n, %m : tensor<5x100xf32>, tensor<1000x128xbf16>, tensor<300xf32>, tensor<f32>
}
