// RUN: %gradc opt %s --split-input-file --verify-each -p canonicalize,cse,dce | filecheck %s
// RUN: %gradc opt %s --split-input-file --verify-each -p canonicalize,cse,dce,canonicalize,cse,dce | filecheck %s
// RUN: %gradc opt %s --split-input-file --verify-each -p cse,dce | filecheck %s --check-prefix=NOCANON

// How the cleanup passes feed each other: canonicalize rewrites ops into equal ones that
// cse merges, and leaves the ops it bypassed for dce; running the trio twice changes
// nothing more.

// Two routes to the same reshape of %x become one reshape; the bypassed reshape and the
// unit constant are removed.
// CHECK-LABEL: func.func @canonical_forms_merge
// CHECK-NEXT:    [[R:%[0-9]+]] = gradc.reshape %x {shape = [3, 4]}
// CHECK-NEXT:    [[A:%[0-9]+]] = gradc.add [[R]], [[R]]
// CHECK-NEXT:    func.return [[A]] :
// Without canonicalize the two reshapes differ (different operands), so cse keeps both.
// NOCANON-LABEL: func.func @canonical_forms_merge
// NOCANON-COUNT-3: gradc.reshape
func.func @canonical_forms_merge(%x: tensor<2x6xf32>) -> tensor<3x4xf32> {
  %0 = gradc.reshape %x {shape = [12]} : (tensor<2x6xf32>) -> tensor<12xf32>
  %1 = gradc.reshape %0 {shape = [3, 4]} : (tensor<12xf32>) -> tensor<3x4xf32>
  %2 = gradc.reshape %x {shape = [3, 4]} : (tensor<2x6xf32>) -> tensor<3x4xf32>
  %c = gradc.constant {dtype = "float32", shape = [], value = 1.0} : () -> tensor<f32>
  %3 = gradc.mul %2, %c : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %4 = gradc.add %1, %3 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %4 : tensor<3x4xf32>
}

// -----

// Constant folding makes equal constants (2 + 1 and 3), cse merges them, and the users
// that were different ops on different constants become one.
// CHECK-LABEL: func.func @folded_constants_merge
// CHECK-NEXT:    [[C:%[0-9]+]] = gradc.constant {dtype = "float32", shape = [], value = 3.0}
// CHECK-NEXT:    [[M:%[0-9]+]] = gradc.mul %x, [[C]]
// CHECK-NEXT:    func.return [[M]], [[M]] :
func.func @folded_constants_merge(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = gradc.constant {dtype = "float32", shape = [], value = 2.0} : () -> tensor<f32>
  %1 = gradc.constant {dtype = "float32", shape = [], value = 1.0} : () -> tensor<f32>
  %2 = gradc.add %0, %1 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %3 = gradc.constant {dtype = "float32", shape = [], value = 3.0} : () -> tensor<f32>
  %4 = gradc.mul %x, %2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %5 = gradc.mul %x, %3 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %4, %5 : tensor<4xf32>, tensor<4xf32>
}

// -----

// The adjoint of a value used twice repeats work (one product per use): cse merges the
// repeats, and dce drops the forward op nobody reads. The cotangent's expand goes: the
// product broadcasts it.
// CHECK-LABEL: func.func @joint_cleanup
// CHECK-NEXT:    [[A:%[0-9]+]] = gradc.add %x, %b
// CHECK-NEXT:    [[M:%[0-9]+]] = gradc.mul [[A]], [[A]]
// CHECK-NEXT:    [[S:%[0-9]+]] = gradc.sum [[M]]
// CHECK-NEXT:    [[R:%[0-9]+]] = gradc.reshape %ct0
// CHECK-NEXT:    [[P:%[0-9]+]] = gradc.mul [[R]], [[A]]
// CHECK-NEXT:    [[D:%[0-9]+]] = gradc.add [[P]], [[P]]
// CHECK-NEXT:    [[G:%[0-9]+]] = gradc.sum [[D]] {dims = [0], keepdim = true}
// CHECK-NEXT:    [[GR:%[0-9]+]] = gradc.reshape [[G]] {shape = [3]}
// CHECK-NEXT:    func.return [[S]], [[GR]] :
// NOCANON-LABEL: func.func @joint_cleanup
// NOCANON:         gradc.sum_to
// NOCANON-NOT:     gradc.argmax
func.func @joint_cleanup(%x: tensor<2x3xf32>, %b: tensor<3xf32>, %ct0: tensor<f32>) -> (tensor<f32>, tensor<3xf32>) attributes {gradc.num_cotangents = 1, gradc.num_outputs = 1, gradc.wrt = [1]} {
  %0 = gradc.add %x, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = gradc.mul %0, %0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = gradc.sum %1 {dims = [0, 1], keepdim = false} : (tensor<2x3xf32>) -> tensor<f32>
  %3 = gradc.argmax %0 {dim = 1, keepdim = false} : (tensor<2x3xf32>) -> tensor<2xi64>
  %4 = gradc.reshape %ct0 {shape = [1, 1]} : (tensor<f32>) -> tensor<1x1xf32>
  %5 = gradc.expand %4 {shape = [2, 3]} : (tensor<1x1xf32>) -> tensor<2x3xf32>
  %6 = gradc.mul %5, %0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = gradc.mul %5, %0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %8 = gradc.add %6, %7 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %9 = gradc.sum_to %8 {shape = [3]} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return %2, %9 : tensor<f32>, tensor<3xf32>
}
