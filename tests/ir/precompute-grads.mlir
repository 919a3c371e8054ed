// RUN: %gradc opt %s --split-input-file -p 'autodiff,precompute-grads,canonicalize,cse,dce' --verify-each | filecheck %s

// The cotangent argument becomes the constant 1: loss and gradient from the primals alone.
// CHECK-LABEL: func.func @square_sum_precomputed(%x: tensor<3xf32>) -> (tensor<f32>, tensor<3xf32>)
// CHECK-NOT:     %ct0
// CHECK:         [[SQ:%[0-9]+]] = gradc.mul %x, %x
// CHECK:         [[L:%[0-9]+]] = gradc.sum [[SQ]]
// CHECK:         [[G:%[0-9]+]] = gradc.add
// CHECK:         func.return [[L]], [[G]] : tensor<f32>, tensor<3xf32>
func.func @square_sum(%x: tensor<3xf32> {gradc.requires_grad}) -> tensor<f32> {
  %0 = gradc.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = gradc.sum %0 {dims = [0], keepdim = false} : (tensor<3xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}
