// RUN: %gradc opt %s --split-input-file --verify-diagnostics

func.func @unknown_op(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{unknown op 'gradc.frobnicate'}}
  %0 = gradc.frobnicate %x : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @undefined(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{use of undefined value '%y'}}
  %0 = gradc.neg %y : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @type_mismatch(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{use of value '%x' expects different type than its definition: 'tensor<3xf32>' vs 'tensor<2xf32>'}}
  %0 = gradc.neg %x : (tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @forward_type(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = gradc.neg %1 : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error@+1 {{definition of '%1' has type tensor<3xf32>, but an earlier use (line}}
  %1 = gradc.exp %x : (tensor<2xf32>) -> tensor<3xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @bad_attr(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{bad attribute value 'yes'}}
  %0 = gradc.sum %x {dims = [0], keepdim = yes} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @duplicate_attr(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{duplicate attribute 'dims'}}
  %0 = gradc.sum %x {dims = [0], dims = [1], keepdim = false} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

// expected-error@+1 {{bad type 'tensor<2xf16>'}}
func.func @bad_type(%x: tensor<2xf16>) {
  func.return
}

// -----

func.func @redefinition(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = gradc.neg %x : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error@+1 {{redefinition of value '%0'}}
  %0 = gradc.exp %x : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @multi_result_use(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0:2 = gradc.max_dim %x {dim = 1, keepdim = false} : (tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xi64>)
  // expected-error@+1 {{'%0' names 2 results; use '%0#0' .. '%0#1'}}
  func.return %0 : tensor<2xf32>
}

// -----

func.func @operand_types(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'gradc.add' has 2 operand(s) but its type lists 1}}
  %0 = gradc.add %x, %x : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @missing_colon(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{expected ':' before the op's type, found '('}}
  %0 = gradc.neg %x (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @region_scope(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = gradc.fused %a ({
  ^bb0(%x: tensor<4xf32>):
    %1 = gradc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    gradc.yield %1 : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error@+1 {{use of undefined value '%1'}}
  func.return %1 : tensor<4xf32>
}

// -----

func.func @dup(%x: tensor<2xf32>) {
  func.return
}
// expected-error@+1 {{redefinition of symbol @dup}}
func.func @dup(%x: tensor<2xf32>) {
  func.return
}

// -----

// expected-error@+1 {{unexpected character '!'}}
func.func @lex(%x: tensor<2xf32>) ! {
  func.return
}
