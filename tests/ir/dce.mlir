// RUN: %gradc opt %s --split-input-file -p dce | filecheck %s

// Unused pure ops go, whole dead chains in one run; used ops and the return stay.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    [[L:%[0-9]+]] = gradc.log %x
// CHECK-NEXT:    func.return [[L]]
func.func @chain(%x: tensor<5xf32>) -> tensor<5xf32> {
  %0 = gradc.exp %x : (tensor<5xf32>) -> tensor<5xf32>
  %1 = gradc.neg %0 : (tensor<5xf32>) -> tensor<5xf32>
  %2 = gradc.sum %1 {dims = [0], keepdim = false} : (tensor<5xf32>) -> tensor<f32>
  %3 = gradc.log %x : (tensor<5xf32>) -> tensor<5xf32>
  func.return %3 : tensor<5xf32>
}

// -----

// A multi-result op stays while any of its results is used.
// CHECK-LABEL: func.func @multi
// CHECK-NEXT:    [[M:%[0-9]+]]:2 = gradc.min_dim %x
// CHECK-NEXT:    func.return [[M]]#1
func.func @multi(%x: tensor<2x3xf32>) -> tensor<2xi64> {
  %0:2 = gradc.min_dim %x {dim = 1, keepdim = false} : (tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xi64>)
  %1:2 = gradc.max_dim %x {dim = 1, keepdim = false} : (tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xi64>)
  func.return %0#1 : tensor<2xi64>
}

// -----

// Dead ops inside a fused body go; an unused fused op of pure ops goes entirely.
// CHECK-LABEL: func.func @fused
// CHECK-NEXT:    [[F:%[0-9]+]] = gradc.fused %a ({
// CHECK-NEXT:    ^bb0(%x: tensor<4xf32>):
// CHECK-NEXT:      [[E:%[0-9]+]] = gradc.exp %x
// CHECK-NEXT:      gradc.yield [[E]]
// CHECK-NEXT:    })
// CHECK-NEXT:    func.return [[F]]
func.func @fused(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = gradc.fused %a ({
  ^bb0(%x: tensor<4xf32>):
    %1 = gradc.sin %x : (tensor<4xf32>) -> tensor<4xf32>
    %2 = gradc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    gradc.yield %2 : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = gradc.fused %a ({
  ^bb0(%y: tensor<4xf32>):
    %4 = gradc.cos %y : (tensor<4xf32>) -> tensor<4xf32>
    gradc.yield %4 : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// Nothing to remove: the function is unchanged (arguments stay even when unused).
// CHECK-LABEL: func.func @live(%x: tensor<f32>, %unused: tensor<f32>) -> tensor<f32> {
// CHECK-NEXT:    func.return %x : tensor<f32>
func.func @live(%x: tensor<f32>, %unused: tensor<f32>) -> tensor<f32> {
  func.return %x : tensor<f32>
}
