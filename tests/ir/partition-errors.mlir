// RUN: not %gradc opt %s --split-input-file -p partition 2>&1 | filecheck %s
// RUN: not %gradc opt %s -p 'partition{policy=fastest}' 2>&1 | filecheck %s --check-prefix=POLICY
// RUN: not %gradc opt %s -p 'partition{policy=1}' 2>&1 | filecheck %s --check-prefix=POLICY-INT

// An unknown policy is rejected when the pipeline is built, before any IR is read.
// POLICY:     gradc opt: error: partition: unknown policy 'fastest' (expected one of save-all, min-memory)
// POLICY-NOT: Traceback
// POLICY-INT: gradc opt: error: partition: unknown policy '1' (expected one of save-all, min-memory)

// A function that autodiff did not produce is an error, not silently left unsplit.
// CHECK: error: pass 'partition' failed: PartitionError: partition: @plain is not a joint function from autodiff (missing gradc.num_outputs, gradc.num_cotangents, gradc.wrt); run autodiff first
func.func @plain(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

// CHECK: error: pass 'partition' failed: PartitionError: partition: @partial is not a joint function from autodiff (missing gradc.num_cotangents)
func.func @partial(%x: tensor<3xf32>, %ct0: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) attributes {gradc.num_outputs = 1, gradc.wrt = [0]} {
  %0 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = gradc.mul %ct0, %0 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0, %1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// The layout attributes must agree with the signature: here 1 output + 2 gradients is not
// the function's 2 results.
// CHECK: error: pass 'partition' failed: PartitionError: partition: @inconsistent has an inconsistent joint layout (gradc.num_outputs = 1, gradc.num_cotangents = 1, gradc.wrt = [0, 1] for 2 arguments and 2 results)
func.func @inconsistent(%x: tensor<3xf32>, %ct0: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) attributes {gradc.num_cotangents = 1, gradc.num_outputs = 1, gradc.wrt = [0, 1]} {
  %0 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = gradc.mul %ct0, %0 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0, %1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// More cotangents than arguments.
// CHECK: error: pass 'partition' failed: PartitionError: partition: @too_many_cotangents has an inconsistent joint layout
func.func @too_many_cotangents(%x: tensor<3xf32>) -> tensor<3xf32> attributes {gradc.num_cotangents = 2, gradc.num_outputs = 1, gradc.wrt = []} {
  func.return %x : tensor<3xf32>
}
