// RUN: %gradc opt %s --split-input-file | filecheck %s
// RUN: %gradc opt %s --split-input-file | %gradc opt - --split-input-file | filecheck %s

// The printed form is stable: printing, parsing and printing again gives the same text.

// CHECK-LABEL: func.func @loss(%x: tensor<2x2xf32> {gradc.requires_grad}, %w: tensor<f32>) -> tensor<f32> {
// CHECK-NEXT:    [[M:%[0-9]+]] = gradc.mul %x, %w : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>   // model.py:12
// CHECK-NEXT:    [[R:%[0-9]+]] = gradc.mean [[M]] {dims = [0, 1], keepdim = false} : (tensor<2x2xf32>) -> tensor<f32>
// CHECK-NEXT:    func.return [[R]] : tensor<f32>
// CHECK-NEXT:  }
func.func @loss(%x: tensor<2x2xf32> {gradc.requires_grad}, %w: tensor<f32>) -> tensor<f32> {
  %0 = gradc.mul %x, %w : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>   // model.py:12
  %1 = gradc.mean %0 {dims = [0, 1], keepdim = false} : (tensor<2x2xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}

// -----

// Multi-result ops define %N:2 and are used as %N#0 / %N#1; results are renumbered in order.
// CHECK-LABEL: func.func @maxdim(%arg0: tensor<3x4xf32>) -> (tensor<3xf32>, tensor<3xi64>)
// CHECK-NEXT:    [[MX:%[0-9]+]]:2 = gradc.max_dim %arg0 {dim = 1, keepdim = false} : (tensor<3x4xf32>) -> (tensor<3xf32>, tensor<3xi64>)
// CHECK-NEXT:    [[N:%[0-9]+]] = gradc.neg [[MX]]#0 : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    func.return [[N]], [[MX]]#1 : tensor<3xf32>, tensor<3xi64>
func.func @maxdim(%0: tensor<3x4xf32>) -> (tensor<3xf32>, tensor<3xi64>) {
  %7:2 = gradc.max_dim %0 {dim = 1, keepdim = false} : (tensor<3x4xf32>) -> (tensor<3xf32>, tensor<3xi64>)
  %neg = gradc.neg %7#0 : (tensor<3xf32>) -> tensor<3xf32>
  func.return %neg, %7#1 : tensor<3xf32>, tensor<3xi64>
}

// -----

// Attributes: sorted keys, ints, floats (always with '.' or 'e'), inf/-inf/nan, bools,
// strings, none and nested lists (the index op's key).
// CHECK-LABEL: func.func @attrs
// CHECK:         gradc.clamp %a {max = inf, min = -1.5e-07}
// CHECK:         gradc.constant {dtype = "float32", shape = [3], value = [1.0, nan, -inf]}
// CHECK:         gradc.index %b, %idx {key = {{\[\["slice", 0, none, 2\], \["int", 1\], \["tensor", 0\]\]}}}
// CHECK:         gradc.cast %{{[0-9]+}} {dtype = "float64"}
// CHECK:         gradc.sum %{{[0-9]+}} {dims = [], keepdim = true}
func.func @attrs(%a: tensor<4x3xf32>, %b: tensor<6x2x3xf32>, %idx: tensor<2xi64>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3x2xf64>) {
  %0 = gradc.clamp %a {min = -1.5e-7, max = inf} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = gradc.constant {value = [1.0, nan, -inf], shape = [3], dtype = "float32"} : () -> tensor<3xf32>
  %2 = gradc.index %b, %idx {key = [["slice", 0, none, 2], ["int", 1], ["tensor", 0]]} : (tensor<6x2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  %3 = gradc.cast %2 {dtype = "float64"} : (tensor<3x2xf32>) -> tensor<3x2xf64>
  %4 = gradc.sum %3 {dims = [], keepdim = true} : (tensor<3x2xf64>) -> tensor<3x2xf64>
  func.return %0, %1, %4 : tensor<4x3xf32>, tensor<3xf32>, tensor<3x2xf64>
}

// -----

// A gradc.fused region: block header, nested indentation, outer values through block args.
// CHECK-LABEL: func.func @fused(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<f32> {
// CHECK-NEXT:    [[F:%[0-9]+]] = gradc.fused %a, %b {kernel = "k0"} ({
// CHECK-NEXT:    ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
// CHECK-NEXT:      [[S:%[0-9]+]] = gradc.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:      [[T:%[0-9]+]] = gradc.sum [[S]] {dims = [0], keepdim = false} : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT:      gradc.yield [[T]] : tensor<f32>
// CHECK-NEXT:    }) : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>   // model.py:3
// CHECK-NEXT:    func.return [[F]] : tensor<f32>
func.func @fused(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<f32> {
  %0 = gradc.fused %a, %b {kernel = "k0"} ({
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
    %1 = gradc.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %2 = gradc.sum %1 {dims = [0], keepdim = false} : (tensor<4xf32>) -> tensor<f32>
    gradc.yield %2 : tensor<f32>
  }) : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>   // model.py:3
  func.return %0 : tensor<f32>
}

// -----

// Function attributes, a function location, several functions in one module, no results.
// CHECK-LABEL: func.func @first(%arg0: tensor<i1>) attributes {gradc.num_outputs = 0, gradc.wrt = [0, 1]} {   // model.py:1
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-EMPTY:
// CHECK-NEXT:  func.func @second(%p: tensor<0x3xi64>, %q: tensor<f64>) -> tensor<0x3xi64> {
// CHECK-NEXT:    func.return %p : tensor<0x3xi64>
func.func @first(%0: tensor<i1>) attributes {gradc.wrt = [0, 1], gradc.num_outputs = 0} {   // model.py:1
  func.return
}
func.func @second(%p: tensor<0x3xi64>, %q: tensor<f64>) -> tensor<0x3xi64> {
  func.return %p : tensor<0x3xi64>
}

// -----

// Activations with float and string attributes (softplus, elu, gelu) and log1p/expm1/erf.
// CHECK-LABEL: func.func @activations(%x: tensor<3xf64>) -> tensor<3xf64> {
// CHECK-NEXT:    [[S:%[0-9]+]] = gradc.softplus %x {beta = 2.0, threshold = 5.0} : (tensor<3xf64>) -> tensor<3xf64>
// CHECK-NEXT:    [[E:%[0-9]+]] = gradc.elu [[S]] {alpha = 0.5} : (tensor<3xf64>) -> tensor<3xf64>
// CHECK-NEXT:    [[G:%[0-9]+]] = gradc.gelu [[E]] {approximate = "tanh"} : (tensor<3xf64>) -> tensor<3xf64>
// CHECK-NEXT:    [[L:%[0-9]+]] = gradc.log1p [[G]] : (tensor<3xf64>) -> tensor<3xf64>
// CHECK-NEXT:    [[M:%[0-9]+]] = gradc.expm1 [[L]] : (tensor<3xf64>) -> tensor<3xf64>
// CHECK-NEXT:    [[R:%[0-9]+]] = gradc.erf [[M]] : (tensor<3xf64>) -> tensor<3xf64>
// CHECK-NEXT:    func.return [[R]] : tensor<3xf64>
func.func @activations(%x: tensor<3xf64>) -> tensor<3xf64> {
  %0 = gradc.softplus %x {beta = 2.0, threshold = 5.0} : (tensor<3xf64>) -> tensor<3xf64>
  %1 = gradc.elu %0 {alpha = 0.5} : (tensor<3xf64>) -> tensor<3xf64>
  %2 = gradc.gelu %1 {approximate = "tanh"} : (tensor<3xf64>) -> tensor<3xf64>
  %3 = gradc.log1p %2 : (tensor<3xf64>) -> tensor<3xf64>
  %4 = gradc.expm1 %3 : (tensor<3xf64>) -> tensor<3xf64>
  %5 = gradc.erf %4 : (tensor<3xf64>) -> tensor<3xf64>
  func.return %5 : tensor<3xf64>
}
