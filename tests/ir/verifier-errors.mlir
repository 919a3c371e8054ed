// RUN: %gradc opt %s --split-input-file --verify-diagnostics

func.func @result_type(%x: tensor<2xf32>, %y: tensor<2xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'gradc.add' op result #0 has type tensor<3xf32> but the op table infers tensor<2xf32>}}
  %0 = gradc.add %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @result_dtype(%x: tensor<2xf32>, %y: tensor<2xf32>) -> tensor<2xf32> {
  %0 = gradc.lt %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>  // expected-error {{infers tensor<2xi1>}}
  func.return %0 : tensor<2xf32>
}

// -----

func.func @broadcast(%x: tensor<2xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'gradc.mul' op rejects its operands: The size of tensor a (2) must match the size of tensor b (3)}}
  %0 = gradc.mul %x, %y : (tensor<2xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @unknown_attr(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'gradc.sum' op has unknown attribute(s) 'axis' (allowed: dims, keepdim)}}
  %0 = gradc.sum %x {axis = 0, dims = [0], keepdim = false} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @missing_attr(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'gradc.sum' op is missing required attribute(s) 'keepdim'}}
  %0 = gradc.sum %x {dims = [0]} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @operand_count(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'gradc.neg' op expects 1 operand(s), got 2}}
  %0 = gradc.neg %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @result_count(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'gradc.neg' op expects 1 result(s), got 2}}
  %0:2 = gradc.neg %x : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  func.return %0#0 : tensor<2xf32>
}

// -----

func.func @variadic_empty() -> tensor<0xf32> {
  // expected-error@+1 {{'gradc.cat' op expects at least 1 operand, got 0}}
  %0 = gradc.cat {dim = 0} : () -> tensor<0xf32>
  func.return %0 : tensor<0xf32>
}

// -----

func.func @dominance(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'gradc.neg' op operand #0 does not dominate this use}}
  %0 = gradc.neg %1 : (tensor<2xf32>) -> tensor<2xf32>
  %1 = gradc.exp %x : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @self_use(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{operand #1 does not dominate this use}}
  %0 = gradc.add %x, %0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @region_dominance(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = gradc.fused %a ({
  ^bb0(%x: tensor<4xf32>):
    // expected-error@+1 {{'gradc.add' op operand #1 does not dominate this use}}
    %1 = gradc.add %x, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    gradc.yield %1 : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = gradc.exp %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @return_types(%x: tensor<2xf32>) -> tensor<f32> {
  // expected-error@+1 {{'func.return' op returns (tensor<2xf32>) but @return_types declares results (tensor<f32>)}}
  func.return %x : tensor<2xf32>
}

// -----

// expected-error@+1 {{function @no_return body must end with 'func.return'}}
func.func @no_return(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = gradc.neg %x : (tensor<2xf32>) -> tensor<2xf32>
}

// -----

func.func @return_not_last(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'func.return' op must be the last op of its block}}
  func.return %x : tensor<2xf32>
  func.return %x : tensor<2xf32>
}

// -----

func.func @yield_outside(%x: tensor<2xf32>) {
  // expected-error@+1 {{'gradc.yield' op may only terminate a 'gradc.fused' body}}
  gradc.yield %x : tensor<2xf32>
  func.return
}

// -----

func.func @fused_args(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'gradc.fused' op has 2 operands but its body has 1 arguments}}
  %0 = gradc.fused %a, %b ({
  ^bb0(%x: tensor<4xf32>):
    gradc.yield %x : tensor<4xf32>
  }) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @fused_arg_type(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'gradc.fused' op operand #0 has type tensor<4xf32> but body argument 0 has type tensor<4xf64>}}
  %0 = gradc.fused %a ({
  ^bb0(%x: tensor<4xf64>):
    %1 = gradc.cast %x {dtype = "float32"} : (tensor<4xf64>) -> tensor<4xf32>
    gradc.yield %1 : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @fused_yield(%a: tensor<4xf32>) -> tensor<f32> {
  %0 = gradc.fused %a ({
  ^bb0(%x: tensor<4xf32>):
    // expected-error@+1 {{'gradc.yield' op yields (tensor<4xf32>) but the enclosing 'gradc.fused' has results (tensor<f32>)}}
    gradc.yield %x : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @fused_no_yield(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'gradc.fused' op body must end with 'gradc.yield'}}
  %0 = gradc.fused %a ({
  ^bb0(%x: tensor<4xf32>):
    %1 = gradc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @bad_key(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'gradc.index' op rejects its operands}}
  %0 = gradc.index %x {key = [["int", 7]]} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
