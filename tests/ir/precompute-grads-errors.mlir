// RUN: not %gradc opt %s -p 'precompute-grads' 2>&1 | filecheck %s --check-prefix=NOTJOINT
// RUN: not %gradc opt %s -p 'autodiff,precompute-grads' 2>&1 | filecheck %s --check-prefix=NOTSCALAR

// NOTJOINT: precompute-grads: @twice is not a joint function from autodiff
// NOTSCALAR: precompute-grads: @twice_joint must return one 0-d floating point tensor
func.func @twice(%x: tensor<3xf32> {gradc.requires_grad}) -> tensor<3xf32> {
  %0 = gradc.add %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
