"""gradc's commands end to end, each run through a subprocess (``python -m gradc ...``):
dump-ir at every stage, graph, explain-memory, demo, --help and the one-line errors."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SEED003 = '''\
import gradc


def loss(inp, w1, w2, w3):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    return (l2 * l3).mean()
'''

MLP = '''\
from gradc.nn import functional as F


def mlp_loss(x, y, w1, b1, w2, b2):
    h = F.relu(F.linear(x, w1, b1))
    return F.mse_loss(F.linear(h, w2, b2).tanh(), y)
'''

BROKEN = "raise RuntimeError('boom at import')\n"

BAD_FUNCTIONS = '''\
def branches(x):
    if x.sum() > 0:
        return x
    return -x


def nothing(x):
    return None


def reshapes(x):
    return x.reshape(7)
'''

SEED_ARGS = ["--arg", "inp=f32[2,2]:grad", "--arg", "w1=f32[]:grad", "--arg", "w2=f32[]:grad",
             "--arg", "w3=f32[]:grad"]
SEED_NOGRAD = ["--arg", "inp=f32[2,2]", "--arg", "w1=f32[]", "--arg", "w2=f32[]", "--arg", "w3=f32[]"]
MLP_ARGS = ["--arg", "x=f32[16,8]", "--arg", "y=f32[16,4]", "--arg", "w1=f32[32,8]:grad",
            "--arg", "b1=f32[32]:grad", "--arg", "w2=f32[4,32]:grad", "--arg", "b2=f32[4]:grad"]


def gradc(*args, env=None, timeout=300):
    environ = dict(os.environ)
    environ["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO), environ.get("PYTHONPATH", "")] if p)
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "gradc", *map(str, args)], capture_output=True, text=True,
                          env=environ, timeout=timeout)


def ok(*args, **kw):
    r = gradc(*args, **kw)
    assert r.returncode == 0, f"gradc {' '.join(map(str, args))} failed:\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    (d / "seed003.py").write_text(SEED003)
    (d / "mlp.py").write_text(MLP)
    (d / "broken.py").write_text(BROKEN)
    (d / "syntax.py").write_text("def f(:\n    pass\n")
    (d / "binary.py").write_bytes(b"\xff\xfe\x00garbage")
    (d / "bad.py").write_text(BAD_FUNCTIONS)
    return d


@pytest.fixture(scope="module")
def seed(files):
    return f"{files / 'seed003.py'}:loss"


@pytest.fixture(scope="module")
def mlp(files):
    return f"{files / 'mlp.py'}:mlp_loss"


# ---- help ---------------------------------------------------------------------------------------
def test_help_on_every_command():
    r = ok("--help")
    for cmd in ("opt", "dump-ir", "graph", "explain-memory", "demo"):
        assert cmd in r.stdout
        sub = ok(cmd, "--help")
        assert sub.stdout.startswith(f"usage: gradc {cmd}")
    assert "--stage" in ok("dump-ir", "--help").stdout


def test_no_command_is_an_error():
    r = gradc()
    assert r.returncode == 2 and "usage: gradc" in r.stderr


# ---- dump-ir ------------------------------------------------------------------------------------
SEED_STAGES = {
    "traced": ["func.func @loss(", "{gradc.requires_grad}", "gradc.mean", "// seed003.py:5"],
    "adjoint": ["func.func @loss_joint(", "%ct0", "gradc.num_cotangents = 1", "gradc.wrt = [0, 1, 2, 3]"],
    "forward": ["func.func @loss_forward(", "gradc.residuals = ", "gradc.mean"],
    "backward": ["func.func @loss_backward(", "%ct0", "gradc.wrt = [0, 1, 2, 3]"],
    "optimized": ["func.func @loss_forward(", "func.func @loss_backward(", "gradc.fused", "gradc.yield"],
    "kernels": ["// kernels of the precomputed stage", "kernel @loss_precomputed_fused0(", "reduce.sum",
                "store %out0", "// cpu: 1 pass over the reduced axes", "//   pass 1: reduce %8"],
    "llvm": ['define void @"loss_precomputed_fused0"', "target triple"],
    "ptx": [".visible .entry loss_precomputed_fused0(", ".target sm_80"],
}


@pytest.mark.parametrize("stage", ["kernels", "llvm", "ptx"])
def test_dump_ir_kernels_of_the_separate_backward(seed, stage):
    """--backward separate lowers the optimized forward and backward, as
    @gradc.compile(backward="separate") runs them."""
    out = ok("dump-ir", seed, *SEED_ARGS, "--stage", stage, "--backward", "separate").stdout
    for fn in ("loss_forward_fused0", "loss_backward_fused0"):
        assert fn in out
    assert "loss_precomputed" not in out


def test_dump_ir_kernels_follow_the_functions_backward_option(tmp_path):
    src = tmp_path / "sep.py"
    src.write_text("import gradc\n\n\n@gradc.compile(backward='separate')\ndef f(x):\n"
                   "    return (x.exp() / x.exp().sum(1, keepdim=True)).sum()\n")
    out = ok("dump-ir", f"{src}:f", "--arg", "x=f32[64,300]:grad", "--stage", "kernels").stdout
    assert "kernel @f_forward_fused0(" in out and "kernel @f_backward_fused0(" in out
    out = ok("dump-ir", f"{src}:f", "--arg", "x=f32[64,300]:grad", "--stage", "kernels",
             "--backward", "auto").stdout
    assert "kernel @f_precomputed_fused0(" in out and "_forward_" not in out


def test_dump_ir_kernels_show_the_row_schedule(tmp_path):
    """A softmax cross-entropy's row kernel: the schedule comments name its passes, the exp it
    keeps for the gradient pass and the picked logit read at the label."""
    src = tmp_path / "xent.py"
    src.write_text("def f(logits, labels):\n"
                   "    picked = logits.gather(1, labels.unsqueeze(1)).squeeze(1)\n"
                   "    return (logits.logsumexp(1) - picked).mean()\n")
    out = ok("dump-ir", f"{src}:f", "--arg", "logits=f32[64,300]:grad", "--arg", "labels=i64[64]",
             "--stage", "kernels").stdout
    assert "// cpu: 3 passes over the reduced axes per outer point" in out
    assert "(one-hot sums)" in out and "keep %" in out and "read back %" in out
    assert "one-hot addend added at the label" in out


def test_dump_ir_precompute_needs_a_scalar_loss(tmp_path):
    src = tmp_path / "vec.py"
    src.write_text("def f(x):\n    return x * 2\n")
    r = gradc("dump-ir", f"{src}:f", "--arg", "x=f32[3]:grad", "--stage", "kernels", "--backward", "precompute")
    assert r.returncode != 0 and "must return one 0-d floating point tensor" in r.stderr


@pytest.mark.parametrize("stage", list(SEED_STAGES))
def test_dump_ir_every_stage(seed, stage):
    out = ok("dump-ir", seed, *SEED_ARGS, "--stage", stage).stdout
    for needle in SEED_STAGES[stage]:
        assert needle in out, f"{needle!r} missing from --stage {stage}:\n{out}"
    if stage in ("traced", "adjoint", "forward", "backward"):
        assert "gradc.fused" not in out      # fuse has not run yet
        assert out.count("func.func @") == 1


def test_dump_ir_default_is_optimized(seed):
    assert ok("dump-ir", seed, *SEED_ARGS).stdout == ok("dump-ir", seed, *SEED_ARGS, "--stage", "optimized").stdout


def test_dump_ir_mlp(mlp):
    opt = ok("dump-ir", mlp, *MLP_ARGS).stdout
    assert "gradc.matmul" in opt and "gradc.fused" in opt
    kernels = ok("dump-ir", mlp, *MLP_ARGS, "--stage", "kernels", "--backward", "separate").stdout
    n_kernels = kernels.count("// ----- kernel ")
    assert "kernel @mlp_loss_forward_matmul0(" in kernels and "kernel @mlp_loss_forward_fused0(" in kernels
    assert n_kernels == opt.count("gradc.fused") + opt.count("gradc.matmul")
    ptx = ok("dump-ir", mlp, *MLP_ARGS, "--stage", "ptx", "--sm", "sm_90", "--backward", "separate").stdout
    assert ptx.count(".visible .entry ") == n_kernels and ".target sm_90" in ptx
    llvm = ok("dump-ir", mlp, *MLP_ARGS, "--stage", "llvm", "--llvm-optimized", "--backward", "separate").stdout
    assert llvm.count("define ") >= n_kernels


def test_dump_ir_output_file_parses_with_opt(seed, tmp_path):
    for stage in ("adjoint", "optimized"):
        out = tmp_path / f"{stage}.mlir"
        r = ok("dump-ir", seed, *SEED_ARGS, "--stage", stage, "-o", out)
        assert r.stdout == ""
        assert ok("opt", out).stdout == out.read_text()


def test_dump_ir_print_ir_after_all(seed):
    r = ok("dump-ir", seed, *SEED_ARGS, "--print-ir-after-all")
    passes = re.findall(r"^// -----// IR Dump After (\S+) //----- //$", r.stderr, re.M)
    assert passes == ["autodiff", "decompose", "canonicalize", "cse", "dce", "partition", "fuse"]
    assert "gradc.fused" in r.stdout


def test_dump_ir_memory_policy(seed):
    save_all = ok("dump-ir", seed, *SEED_ARGS, "--stage", "forward", "--memory", "save-all").stdout
    min_mem = ok("dump-ir", seed, *SEED_ARGS, "--stage", "forward").stdout

    assert save_all != min_mem
    # min-memory saves the inputs and recomputes l1, l2, l3; canonicalize turns w2's gradient,
    # sum(g * l1 * w3), into g * w1 * w3 * sum(inp), and a reduction is saved, never recomputed:
    # one 1x1 residual. save-all saves the 2x2 intermediates.
    assert re.search(r"func.return %\d+, %inp, %w1, %w2, %w3, %\d+ : tensor<f32>, tensor<2x2xf32>, "
                     r"tensor<f32>, tensor<f32>, tensor<f32>, tensor<1x1xf32>\n", min_mem)
    saved = re.search(r"@loss_forward\(.*?\) -> \((.*?)\) attributes", save_all).group(1)
    assert saved.count("tensor<2x2xf32>") >= 3      # inp and at least two of l1, l2, l3


def test_dump_ir_custom_pipeline(seed):
    r = ok("dump-ir", seed, *SEED_ARGS, "--pipeline", "autodiff,canonicalize,cse,dce,partition{policy=save-all},fuse",
           "--print-ir-after-all")
    assert re.findall(r"IR Dump After (\S+) ", r.stderr) == ["autodiff", "canonicalize", "cse", "dce", "partition",
                                                              "fuse"]
    assert "func.func @loss_forward(" in r.stdout and "gradc.fused" in r.stdout
    only_cse = ok("dump-ir", seed, *SEED_ARGS, "--pipeline", "cse").stdout
    assert "func.func @loss(" in only_cse and "gradc.fused" not in only_cse
    kernels = ok("dump-ir", seed, *SEED_ARGS, "--pipeline", "fuse", "--stage", "kernels").stdout
    assert "kernel @loss_fused0(" in kernels


def test_dump_ir_without_grad_is_forward_only(seed):
    out = ok("dump-ir", seed, *SEED_NOGRAD).stdout
    assert "func.func @loss(" in out and "gradc.fused" in out and "_backward" not in out
    r = gradc("dump-ir", seed, *SEED_NOGRAD, "--stage", "backward")
    assert r.returncode == 2 and "needs an argument marked :grad" in r.stderr


# ---- errors -------------------------------------------------------------------------------------
ERRORS = [
    (["dump-ir", "{dir}/nope.py:loss", *SEED_ARGS], "no such file"),
    (["dump-ir", "{dir}/seed003.py", *SEED_ARGS], "expected FILE.py:FUNC"),
    (["dump-ir", "{dir}/seed003.py:nope", *SEED_ARGS], "has no function 'nope'"),
    (["dump-ir", "{dir}/broken.py:f"], "boom at import"),
    (["dump-ir", "{dir}/seed003.py:loss", "--arg", "inp=f32(2,2)"], "bad --arg 'inp=f32(2,2)'"),
    (["dump-ir", "{dir}/seed003.py:loss", "--arg", "inp=f16[2,2]"], "unknown dtype 'f16'"),
    (["dump-ir", "{dir}/seed003.py:loss", "--arg", "inp=i64[2]:grad"], "only floating point"),
    (["dump-ir", "{dir}/seed003.py:loss", "--arg", "inp=f32[2]:grd"], "unknown flag 'grd'"),
    (["dump-ir", "{dir}/seed003.py:loss", "--arg", "inp=f32[2,2]"], "missing --arg for parameter 'w1'"),
    (["dump-ir", "{dir}/seed003.py:loss", *SEED_ARGS, "--arg", "zz=f32[]"], "has no parameter 'zz'"),
    (["dump-ir", "{dir}/seed003.py:loss", "--arg", "inp=f32[2,3]", "--arg", "w1=f32[4]", "--arg", "w2=f32[]",
      "--arg", "w3=f32[]"], "tracing loss failed"),
    (["dump-ir", "{dir}/seed003.py:loss", *SEED_ARGS, "--stage", "bogus"], "invalid choice: 'bogus'"),
    (["dump-ir", "{dir}/seed003.py:loss", *SEED_ARGS, "--pipeline", "cse,frobnicate"], "unknown pass 'frobnicate'"),
    (["dump-ir", "{dir}/seed003.py:loss", *SEED_ARGS, "--stage", "ptx", "--sm", "volta"], "bad --sm 'volta'"),
    (["dump-ir", "{dir}/seed003.py:loss", *SEED_ARGS, "--pipeline", "cse", "--stage", "adjoint"],
     "not available with --pipeline"),
    (["graph", "{dir}/seed003.py:nope", *SEED_ARGS], "has no function 'nope'"),
    (["graph", "{dir}/seed003.py:loss", *SEED_ARGS, "--format", "gif"], "invalid choice: 'gif'"),
    (["explain-memory", "{dir}/seed003.py:loss", *SEED_NOGRAD], "nothing is saved for backward"),
    (["explain-memory", "{dir}/seed003.py:loss", *SEED_ARGS, "--memory", "all"], "invalid choice: 'all'"),
    (["demo", "--steps", "0"], "expected a positive integer"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["dump-ir", "{dir}/syntax.py:f", "--arg", "x=f32[2]"], "importing '{dir}/syntax.py' failed: SyntaxError"),
    (["dump-ir", "{dir}/binary.py:f", "--arg", "x=f32[2]"], "importing '{dir}/binary.py' failed"),
    (["dump-ir", "{dir}/seed003.py:loss", "--arg", "inp=f32[a]"], "dims must be non-negative integers"),
    (["dump-ir", "{dir}/seed003.py:loss", "--arg", "inp=f32[2,-1]"], "dims must be non-negative integers"),
    (["dump-ir", "{dir}/seed003.py:loss", *SEED_ARGS, "--pipeline", "cse,,dce"], "empty pass name"),
    (["dump-ir", "{dir}/seed003.py:loss", *SEED_ARGS, "--pipeline", "autodiff{{wrt=x}}"],
     "wrt must be argument positions"),
    (["dump-ir", "{dir}/seed003.py:loss", *SEED_ARGS, "--pipeline", "cse{{x=1}}"],
     "bad options for pass 'cse': unknown option x (it takes no options)"),
    (["dump-ir", "{dir}/bad.py:branches", "--arg", "x=f32[2]"], "TraceError: data-dependent Python control flow"),
    (["dump-ir", "{dir}/bad.py:nothing", "--arg", "x=f32[2]"], "nothing (defined at bad.py:7) returns a value"),
    (["dump-ir", "{dir}/bad.py:reshapes", "--arg", "x=f32[2]"],
     "RuntimeError: shape '[7]' is invalid for input of size 2 (at bad.py:12)"),
    (["graph", "{dir}/bad.py:branches", "--arg", "x=f32[2]"], "at bad.py:2"),
    (["explain-memory", "{dir}/bad.py:reshapes", "--arg", "x=f32[2]:grad"], "(at bad.py:12)"),
]


@pytest.mark.parametrize("argv,message", ERRORS, ids=[f"{a[0]}-{m.split()[0]}" for a, m in ERRORS])
def test_errors_are_one_line_with_exit_2(files, argv, message):
    r = gradc(*[a.format(dir=files) for a in argv])
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1, f"expected one line, got:\n{r.stderr}"
    assert r.stderr.startswith(f"gradc {argv[0]}: error: " if argv[0] != "frobnicate" else "gradc: error: ")
    assert message.format(dir=files) in r.stderr
    assert "Traceback" not in r.stderr


# ---- graph --------------------------------------------------------------------------------------
def test_graph_dot_has_clusters_and_residuals(seed):
    dot = ok("graph", seed, *SEED_ARGS, "--memory", "save-all").stdout
    assert dot.startswith('digraph "loss" {') and dot.rstrip().endswith("}")
    assert dot.count("{") == dot.count("}")
    for cluster in ("cluster_forward", "cluster_backward", "cluster_loss_forward_fused0",
                    "cluster_loss_backward_fused0"):
        assert f"subgraph {cluster} {{" in dot
    residuals = re.findall(r'^  (r\d+) \[label="saved [^"]*", shape="cylinder"', dot, re.M)
    assert residuals, dot
    for r in residuals:   # produced in forward, used in backward
        assert re.search(rf"^  f\d+ -> {r} \[", dot, re.M)
        assert re.search(rf"^  {r} -> b\d+ \[", dot, re.M)
    assert "#ffd966" in dot      # a residual that is not an input (save-all saves intermediates)


def test_graph_dot_file_and_mlp(mlp, tmp_path):
    out = tmp_path / "g.dot"
    r = ok("graph", mlp, *MLP_ARGS, "-o", out)
    assert r.stdout == "" and r.stderr == ""
    text = out.read_text()
    assert "matmul" in text and "cluster_mlp_loss_backward_fused0" in text


def test_graph_svg_without_dot_writes_dot_text(seed, tmp_path):
    out = tmp_path / "g.svg"
    r = ok("graph", seed, *SEED_ARGS, "-o", out, env={"PATH": os.path.dirname(sys.executable)})
    assert not out.exists()
    assert (tmp_path / "g.dot").read_text().startswith("digraph")
    assert r.stderr.count("\n") == 1 and "Graphviz 'dot' is not installed" in r.stderr and "g.dot" in r.stderr


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
@pytest.mark.parametrize("fmt,magic", [("svg", b"<svg"), ("png", b"\x89PNG")])
def test_graph_svg_png_with_dot(seed, tmp_path, fmt, magic):
    out = tmp_path / f"g.{fmt}"
    ok("graph", seed, *SEED_ARGS, "-o", out)
    assert magic in out.read_bytes()[:400]


# ---- explain-memory -----------------------------------------------------------------------------
def _report(target, args, policy):
    return json.loads(ok("explain-memory", target, *args, "--memory", policy, "--json").stdout)


@pytest.mark.parametrize("which", ["seed", "mlp"])
def test_explain_memory_numbers_are_consistent(request, which):
    target = request.getfixturevalue(which)
    args = SEED_ARGS if which == "seed" else MLP_ARGS
    reports = {p: _report(target, args, p) for p in ("save-all", "min-memory")}
    for policy, rep in reports.items():
        assert rep["policy"] == policy
        mem = rep["policies"]
        assert mem["min-memory"]["saved_bytes"] <= mem["save-all"]["saved_bytes"]
        assert mem == reports["save-all"]["policies"]     # both runs measure the same two partitions
        chosen = mem[policy]
        saved = [b for b in rep["buffers"] if b["status"] in ("saved", "saved (copy of input)")]
        assert sum(b["bytes"] for b in saved) == chosen["saved_bytes"]
        assert chosen["backward_peak"] >= chosen["saved_bytes"]
        assert chosen["after_backward"] == 0 and chosen["after_backward_retained"] == chosen["saved_bytes"]
        for b in rep["buffers"]:
            assert b["status"] in ("saved", "saved (input)", "saved (copy of input)", "recomputed", "not needed")
            n = 1
            for d in b["shape"]:
                n *= d
            assert b["bytes"] == n * {"f32": 4, "f64": 8, "i64": 8, "i1": 1}[b["dtype"]]
            assert re.fullmatch(r"\w+\.py:\d+( \(argument\))?", b["source"])
    if which == "seed":   # min-memory recomputes l1, l2, l3 from the inputs and saves one 4-byte sum
        mm = reports["min-memory"]
        # sum(inp) (w2's gradient is g*w1*w3*sum(inp)) and a copy of w2 (eager autograd does not
        # save w2, so the caller may change it before backward)
        assert mm["policies"]["min-memory"]["saved_bytes"] == 8
        assert {b["name"]: b["status"] for b in mm["buffers"]}["%w2"] == "saved (copy of input)"
        assert reports["save-all"]["policies"]["save-all"]["saved_bytes"] > 8
        statuses = {(b["op"], b["status"]) for b in mm["buffers"] if b["op"] != "argument"}
        assert {s for op, s in statuses if op != "gradc.sum"} == {"recomputed"}
        assert ("gradc.sum", "saved") in statuses


def test_explain_memory_counts_the_copy_of_an_input_eager_autograd_would_not_save(tmp_path):
    """sigmoid(x * w + b): eager autograd saves x, w and the sigmoid's result, not b.  The
    min-memory partition recomputes the sigmoid from x, w and b rather than save 8 KiB, so the
    compiled call copies b (the caller may change it in place before backward, legally): the
    report shows the copy and counts its bytes, as ``@gradc.compile`` runs it."""
    src = tmp_path / "bias.py"
    src.write_text("def f(x, w, b):\n    return (x * w + b).sigmoid()\n")
    rep = _report(f"{src}:f", ["--arg", "x=f32[64,32]:grad", "--arg", "w=f32[32]:grad", "--arg", "b=f32[32]:grad"],
                  "min-memory")
    status = {b["name"]: b["status"] for b in rep["buffers"]}
    assert status["%x"] == status["%w"] == "saved (input)" and status["%b"] == "saved (copy of input)"
    assert rep["policies"]["min-memory"]["saved_bytes"] == 128


def test_explain_memory_table(seed):
    out = ok("explain-memory", seed, *SEED_ARGS).stdout
    header = next(line for line in out.splitlines() if line.startswith("value"))
    assert header.split() == ["value", "op", "shape", "dtype", "bytes", "source", "min-memory"]
    assert "seed003.py:6" in out and "recomputed" in out
    for label in ("saved for backward", "forward peak", "backward peak", "with retain_graph=True"):
        assert label in out
    assert "min-memory (chosen)" in out


# ---- demo ---------------------------------------------------------------------------------------
def _accuracy(out):
    m = re.search(r"final training accuracy: ([\d.]+)% \((\d+)/(\d+)\)", out)
    assert m, out
    return float(m.group(1))


def test_demo_quick(tmp_path):
    plot = tmp_path / "demo.png"
    r = ok("demo", "--steps", "30", "--hidden", "16", "--bench-steps", "3", "--plot", plot)
    out = r.stdout
    assert 0 <= _accuracy(out) <= 100
    assert re.search(r"compile time: [\d.]+ s", out)
    assert re.search(r"compiled [\d.]+ ms/step, eager [\d.]+ ms/step", out)
    assert "\r" not in out and re.search(r"^step +30/30 +loss [\d.]+ +accuracy", out, re.M)   # not a TTY
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not plot.exists() and "matplotlib is not installed" in r.stderr
    else:
        assert plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_default_demo_reaches_95_percent():
    t0 = time.perf_counter()
    r = ok("demo", timeout=120)
    assert _accuracy(r.stdout) >= 95.0
    assert time.perf_counter() - t0 < 60


def test_dump_ir_precomputed_stage(seed):
    r = ok("dump-ir", seed, *SEED_ARGS, "--stage", "precomputed")
    assert "func.func @loss_precomputed(" in r.stdout
    # loss and the four gradients come out of one fused kernel, with no cotangent argument
    assert r.stdout.count("gradc.fused") == 1 and "%ct" not in r.stdout
