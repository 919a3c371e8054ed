// RUN: not %gradc opt %s -p 'cse,frobnicate' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not %gradc opt %s -p 'cse{x' 2>&1 | filecheck %s --check-prefix=UNBALANCED
// RUN: not %gradc opt %s -p 'cse{aggressive=1}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not %gradc opt %S/does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: %gradc opt --list-passes | filecheck %s --check-prefix=LIST
// RUN: %gradc opt --help | filecheck %s --check-prefix=HELP
// RUN: not %gradc opt --split-input-file < %s 2>/dev/null | filecheck %s --check-prefix=STDIN
// RUN: not %gradc opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=SPLIT-ERR

// UNKNOWN: gradc opt: error: unknown pass 'frobnicate'; known passes: {{.*}}cse{{.*}}dce
// UNBALANCED: gradc opt: error: unbalanced '{' in pass pipeline
// OPTION: gradc opt: error: bad options for pass 'cse'
// MISSING: gradc opt: error: cannot read '{{.*}}does-not-exist.mlir'
// LIST-DAG: cse
// LIST-DAG: dce
// HELP: usage: gradc opt
// HELP: --pass-pipeline
// HELP: --split-input-file
// HELP: --verify-diagnostics
// STDIN: func.func @ok

// Errors are one line each, with the line of the original file.
// SPLIT-ERR: cli.mlir:[[# @LINE + 10]]:15: error: use of undefined value '%nope'
// SPLIT-ERR-NOT: error

func.func @ok(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}

// -----

func.func @bad(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %nope : tensor<2xf32>
}
