// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_conv_f64.mlir | FileCheck %s --check-prefix=F64
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_conv_3d.mlir | FileCheck %s --check-prefix=CONV3D
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_conv_s8.mlir | FileCheck %s --check-prefix=S8

// Rule (XLA §11.1, target:gpu-conv-layout): cuDNN picks one data
// format for input, filter and output.  On the default device (CUDA, Hopper)
// a float convolution with at most 2 spatial dims runs NHWC / OHWI, f64 and
// 3-D convolutions run NCHW / OIHW, integer convolutions always run NHWC.
// XLA rewrites every convolution into a cuDNN call before layout assignment;
// this is GPUT "RawConvolutionLayoutAssignment".
//
// dim_numbers [b,1,0,f]x[o,1,0,i]->[b,1,0,f]: NHWC is major-to-minor
// [b, s0, s1, f] = [0, 2, 1, 3], i.e. minor_to_major {3,1,2,0}, for the input,
// the OHWI filter and the output.  The default-layout parameters are copied,
// and the root is copied back to the pinned default result.
// CHECK-LABEL: func.func public @main
// CHECK-DAG:     %[[W:.+]] = mhlo.copy %arg1 {{.*}}xla_shape = "f32[32,3,3,16]{3,1,2,0}"
// CHECK-DAG:     %[[X:.+]] = mhlo.copy %arg0 {{.*}}xla_shape = "f32[1,64,64,16]{3,1,2,0}"
// CHECK:         %[[C:.+]] = stablehlo.convolution(%[[X]], %[[W]])
// CHECK-SAME:      xla_shape = "f32[1,64,64,32]{3,1,2,0}"
// CHECK:         %[[R:.+]] = mhlo.copy %[[C]]
// CHECK-SAME:      xla_shape = "f32[1,64,64,32]{3,2,1,0}"
// CHECK:         return %[[R]]
func.func public @main(%x: tensor<1x64x64x16xf32>, %w: tensor<32x3x3x16xf32>) -> tensor<1x64x64x32xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 1, 0, f]x[o, 1, 0, i]->[b, 1, 0, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x64x64x16xf32>, tensor<32x3x3x16xf32>) -> tensor<1x64x64x32xf32>
  return %0 : tensor<1x64x64x32xf32>
}

// GPUT "F64CuDNNConvolutionHasNCHWLayoutPostHopper": cuDNN has no NHWC for
// f64, so NCHW: major-to-minor [b, f, s0, s1] = [0, 3, 2, 1] -> {1,2,3,0}.
// F64-LABEL: func.func public @main
// F64-DAG:     mhlo.copy %arg0 {{.*}}xla_shape = "f64[2,64,64,16]{1,2,3,0}"
// F64-DAG:     mhlo.copy %arg1 {{.*}}xla_shape = "f64[32,3,3,16]{1,2,3,0}"
// F64:         stablehlo.convolution
// F64-SAME:      xla_shape = "f64[2,64,64,32]{1,2,3,0}"

// More than two spatial dims: NCHW even on Hopper.  Input [b,0,1,2,f] in
// NCDHW is major-to-minor [0, 4, 1, 2, 3] -> {3,2,1,4,0}; the filter
// [0,1,2,i,o] in OIDHW is [4, 3, 0, 1, 2] -> {2,1,0,3,4}.
// CONV3D-LABEL: func.func public @main
// CONV3D-DAG:     mhlo.copy %arg0 {{.*}}xla_shape = "f32[1,8,8,8,4]{3,2,1,4,0}"
// CONV3D-DAG:     mhlo.copy %arg1 {{.*}}xla_shape = "f32[3,3,3,4,8]{2,1,0,3,4}"
// CONV3D:         stablehlo.convolution
// CONV3D-SAME:      xla_shape = "f32[1,8,8,8,8]{3,2,1,4,0}"

// Integer convolutions need NHWC whatever the device: for the NCHW-labelled
// [b,f,0,1] input that is major-to-minor [0, 2, 3, 1] -> {1,3,2,0}; the
// [o,i,0,1] filter in OHWI is [0, 2, 3, 1] -> {1,3,2,0}.
// S8-LABEL: func.func public @main
// S8-DAG:     mhlo.copy %arg0 {{.*}}xla_shape = "s8[1,16,32,32]{1,3,2,0}"
// S8-DAG:     mhlo.copy %arg1 {{.*}}xla_shape = "s8[32,16,3,3]{1,3,2,0}"
// S8:         stablehlo.convolution
// S8-SAME:      xla_shape = "s32[1,32,32,32]{1,3,2,0}"
