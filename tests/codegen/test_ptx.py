"""PTX for every catalogue program: emitted with llvmlite's NVPTX target, assembled by ptxas."""
import re
import shutil
import subprocess

import pytest

from gradc.codegen import ptx

from .programs import programs

PROGRAMS = programs()
PTXAS = shutil.which("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not on PATH")


@pytest.fixture(scope="module")
def compiled():
    return {}


def get(compiled, name, sm):
    key = (name, sm)
    if key not in compiled:
        compiled[key] = ptx.compile_ptx(PROGRAMS[name], sm)
    return compiled[key]


@needs_ptxas
@pytest.mark.parametrize("sm", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_ptxas_accepts(name, sm, compiled, tmp_path):
    pk = get(compiled, name, sm)
    path = tmp_path / f"{name}.ptx"
    path.write_text(pk.ptx)
    res = subprocess.run([PTXAS, f"-arch={sm}", str(path), "-o", str(tmp_path / f"{name}.cubin")],
                         capture_output=True, text=True)
    assert res.returncode == 0, f"ptxas -arch={sm} rejected {name}:\n{res.stderr}\n{pk.ptx[:4000]}"


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_ptx_structure(name, compiled):
    pk = get(compiled, name, "sm_80")
    text = pk.ptx
    assert ".target sm_80" in text and f".visible .entry {pk.name}(" in text
    assert ".address_size 64" in text
    assert "call" not in re.sub(r"//.*", "", text), "math functions must be inlined (no libm on the GPU)"
    mode = pk.launch.mode
    if mode == "block":
        assert "shfl.sync.down" in text and ".shared" in text and "bar.sync" in text
    if mode == "matmul":
        assert ".shared" in text and "bar.sync" in text and pk.launch.block == (ptx.TILE, ptx.TILE, 1)
    if mode in ("elementwise", "rows"):
        assert "%nctaid.x" in text, "grid-stride loop expected"
    assert "ld.global" in text and "st.global" in text


def test_modes():
    assert ptx.compile_ptx(PROGRAMS["chain_f32"]).launch.mode == "elementwise"
    assert ptx.compile_ptx(PROGRAMS["softmax_f32_1000"]).launch.mode == "block"
    assert ptx.compile_ptx(PROGRAMS["softmax_f32_16"]).launch.mode == "rows"
    assert ptx.compile_ptx(PROGRAMS["linear_relu_f32"]).launch.mode == "matmul"
    assert ptx.compile_ptx(PROGRAMS["mse_f32"]).launch.mode == "block"


def test_emit_ptx_sm_option():
    text = ptx.emit_ptx(PROGRAMS["chain_f64"], sm="sm_90")
    assert ".target sm_90" in text
    assert "nvvm" not in text


def test_launch_grid():
    l = ptx.compile_ptx(PROGRAMS["chain_f32"]).launch
    assert l.block == (256, 1, 1) and l.grid_for(132) == (4, 1, 1)
    m = ptx.compile_ptx(PROGRAMS["bmm_f32"]).launch
    assert m.grid_for() == (3, 2, 3)
