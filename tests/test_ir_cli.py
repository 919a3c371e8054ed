"""`gradc opt`: IR text in, IR text out, mlir-opt style (the lit tests in tests/ir cover more)."""
import subprocess
import sys

import pytest

from gradc.cli import expected_diagnostics, main, split_input

SRC = """\
func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  %2 = gradc.mul %0, %1 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %2 : tensor<3xf32>
}
"""

CSE_OUT = """\
func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = gradc.mul %0, %0 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %1 : tensor<3xf32>
}
"""


@pytest.fixture
def src(tmp_path):
    p = tmp_path / "in.mlir"
    p.write_text(SRC)
    return p


def test_opt_runs_a_pipeline(src, capsys):
    assert main(["opt", str(src), "-p", "cse,dce"]) == 0
    assert capsys.readouterr().out == CSE_OUT
    assert main(["opt", str(src)]) == 0
    assert capsys.readouterr().out == SRC


def test_opt_output_file_and_stdin(src, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out.mlir"
    assert main(["opt", str(src), "--pass-pipeline", "cse", "-o", str(out)]) == 0
    assert out.read_text() == CSE_OUT
    import io
    monkeypatch.setattr(sys, "stdin", io.StringIO(SRC))
    assert main(["opt", "-", "-p", "cse"]) == 0
    assert capsys.readouterr().out == CSE_OUT


def test_errors_are_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_text(SRC.replace("gradc.mul", "gradc.mull"))
    assert main(["opt", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == f"{bad}:4:8: error: unknown op 'gradc.mull'\n"
    assert main(["opt", str(tmp_path / "missing.mlir")]) == 2
    assert capsys.readouterr().err.startswith("gradc opt: error: cannot read")
    assert main(["opt", str(bad), "-p", "nope"]) == 2
    assert "unknown pass 'nope'" in capsys.readouterr().err
    typed = tmp_path / "typed.mlir"
    typed.write_text(SRC.replace("(tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>",
                                 "(tensor<3xf32>, tensor<3xf32>) -> tensor<4xf32>")
                     .replace("func.return %2 : tensor<3xf32>", "func.return %1 : tensor<3xf32>"))
    assert main(["opt", str(typed)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{typed}:4:3: error: 'gradc.mul' op result #0 has type" in err


@pytest.mark.parametrize("pipeline,message", [
    ("cse,,dce", "gradc opt: error: empty pass name in pass pipeline 'cse,,dce'"),
    ("cse,", "gradc opt: error: empty pass name in pass pipeline 'cse,'"),
    ("cse{x=1}", "gradc opt: error: bad options for pass 'cse': unknown option x (it takes no options)"),
    ("partition{polcy=save-all}", "gradc opt: error: bad options for pass 'partition': unknown option polcy "
                                  "(options: policy, free-inputs)"),
    ("autodiff{wrt=x}", "gradc opt: error: autodiff: wrt must be argument positions (integers, e.g. wrt=0,1), "
                        "got x"),
    ("autodiff{wrt=0,1.5}", "gradc opt: error: autodiff: wrt must be argument positions"),
])
def test_malformed_pipelines_are_one_line_errors(src, capsys, pipeline, message):
    assert main(["opt", str(src), "-p", pipeline]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err


def test_input_that_is_not_text_is_a_one_line_error(tmp_path, capsys):
    binary = tmp_path / "binary.mlir"
    binary.write_bytes(b"\x00\xff\xfe garbage")
    assert main(["opt", str(binary), "-p", "cse"]) == 2
    assert capsys.readouterr().err == f"gradc opt: error: cannot read '{binary}': not UTF-8 text (byte 1 is 0xff)\n"


def test_split_input_file(tmp_path, capsys):
    p = tmp_path / "split.mlir"
    p.write_text(SRC + "// -----\n" + SRC.replace("@f", "@g") + "\n// -----\n")
    assert main(["opt", str(p), "--split-input-file", "-p", "cse"]) == 0
    out = capsys.readouterr().out
    assert out == CSE_OUT + "// -----\n" + CSE_OUT.replace("@f", "@g") + "// -----\n"
    assert split_input("a\n// -----\nb\n") == [("a\n", 0), ("b\n", 2)]


def test_verify_diagnostics(tmp_path, capsys):
    p = tmp_path / "diag.mlir"
    p.write_text("""\
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{unknown op 'gradc.bogus'}}
  %0 = gradc.bogus %x : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// -----
func.func @g(%x: tensor<2xf32>) -> tensor<3xf32> {
  func.return %x : tensor<2xf32> // expected-error {{declares results (tensor<3xf32>)}}
}
""")
    assert main(["opt", str(p), "--split-input-file", "--verify-diagnostics"]) == 0
    assert capsys.readouterr().err == ""
    p.write_text(p.read_text().replace("gradc.bogus'", "gradc.other'"))
    assert main(["opt", str(p), "--split-input-file", "--verify-diagnostics"]) == 2
    err = capsys.readouterr().err
    assert "unexpected error: unknown op 'gradc.bogus'" in err
    assert "expected error \"unknown op 'gradc.other'\" on line 3 was not produced" in err
    assert expected_diagnostics("// expected-error@-1 {{a}}\nx // expected-error {{b}}\n", 10) == [
        (10, "a", 11), (12, "b", 12)]


def test_help_and_no_command(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    assert "opt" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main(["opt", "--help"])
    assert info.value.code == 0
    assert "--split-input-file" in capsys.readouterr().out
    assert main([]) == 2


def test_python_dash_m_gradc(src):
    r = subprocess.run([sys.executable, "-m", "gradc", "opt", str(src), "-p", "cse"], capture_output=True,
                       text=True)
    assert r.returncode == 0 and r.stdout == CSE_OUT
