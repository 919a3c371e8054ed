"""plan-buffers: peaks worked out by hand on small graphs, the forward/backward model of
plan_partition, and allocation invariants on random fused programs."""
import pytest

from gradc.ir import Module, parse_function
from gradc.passes import PassManager
from gradc.passes.partition import partition
from gradc.passes.plan_buffers import ATTR_ARENA, ATTR_BUFFERS, ATTR_PEAK, annotate, plan_function, plan_partition

from .harness import POLICIES, clean, seeded_program, split_and_fuse, verified
from gradc.passes.autodiff import differentiate

T4 = "tensor<4xf32>"   # 16 bytes


def fn(body: str, args: str = f"%x: {T4}", results: str = T4) -> str:
    return f"func.func @f({args}) -> {results} {{\n{body}\n}}\n"


def buffers(plan):
    return [[b.first, b.last, b.offset, b.size] for b in plan.buffers]


def test_chain_reuses_dead_buffers():
    # exp A [0,1], neg B [1,2], tanh C [2,3], sin D escapes [3,4]; 16 B each.
    # live: s0 16, s1 32, s2 32, s3 32, s4 16 -> peak 32; C reuses A's offset 0 -> arena 32
    f = parse_function(fn(f"""
  %0 = gradc.exp %x : ({T4}) -> {T4}
  %1 = gradc.neg %0 : ({T4}) -> {T4}
  %2 = gradc.tanh %1 : ({T4}) -> {T4}
  %3 = gradc.sin %2 : ({T4}) -> {T4}
  func.return %3 : {T4}"""))
    plan = plan_function(f)
    assert buffers(plan) == [[0, 1, 0, 16], [1, 2, 16, 16], [2, 3, 0, 16], [3, 4, -1, 16]]
    assert (plan.peak_bytes, plan.arena_bytes, plan.steps) == (32, 32, 4)
    assert [plan.live_bytes_at(s) for s in range(5)] == [16, 32, 32, 32, 16]


def test_fan_out_keeps_a_value_alive():
    # A=exp 16 [0,3] (read by the last op), B=neg 16 [1,2], C=sin 16 [2,3], D=add 16 escapes [3,4]
    # live: s0 16, s1 32, s2 48, s3 48 (A, C, D), s4 16 -> peak 48
    # offsets, largest first then earliest: A@0, B@16, C overlaps A and B -> @32: arena 48
    f = parse_function(fn(f"""
  %0 = gradc.exp %x : ({T4}) -> {T4}
  %1 = gradc.neg %0 : ({T4}) -> {T4}
  %2 = gradc.sin %1 : ({T4}) -> {T4}
  %3 = gradc.add %0, %2 : ({T4}, {T4}) -> {T4}
  func.return %3 : {T4}"""))
    plan = plan_function(f)
    assert buffers(plan) == [[0, 3, 0, 16], [1, 2, 16, 16], [2, 3, 32, 16], [3, 4, -1, 16]]
    assert (plan.peak_bytes, plan.arena_bytes) == (48, 48)


def test_mixed_sizes_first_fit():
    # x: 2x8xf32 (64 B). Steps: s0 exp A 64 B, s1 sum over dim 1 S 2xf32 = 8 B, s2 neg(x) B 64,
    # s3 reshape of S (a view: no buffer, S is read at s3), s4 mul R 64 escapes (reads B and
    # the view, so S is read at s4 too). Lifetimes: A [0,1], S [1,4], B [2,4], R [4,5].
    # live: s0 64, s1 A+S 72, s2 S+B 72, s3 72, s4 S+B+R 136, s5 64 -> peak 136
    # offsets, largest first: A@0; B does not overlap A -> reuses @0; S overlaps both -> @64.
    # arena 72.
    t = "tensor<2x8xf32>"
    f = parse_function(fn(f"""
  %0 = gradc.exp %x : ({t}) -> {t}
  %1 = gradc.sum %0 {{dims = [1], keepdim = false}} : ({t}) -> tensor<2xf32>
  %2 = gradc.neg %x : ({t}) -> {t}
  %3 = gradc.reshape %1 {{shape = [2, 1]}} : (tensor<2xf32>) -> tensor<2x1xf32>
  %4 = gradc.mul %2, %3 : ({t}, tensor<2x1xf32>) -> {t}
  func.return %4 : {t}""", args=f"%x: {t}", results=t))
    plan = plan_function(f)
    assert buffers(plan) == [[0, 1, 0, 64], [1, 4, 64, 8], [2, 4, 0, 64], [4, 5, -1, 64]]
    assert (plan.peak_bytes, plan.arena_bytes) == (136, 72)


def test_keep_alive_values_escape():
    # keep_alive marks a residual: it lives to the end and leaves the arena.
    f = parse_function(fn(f"""
  %0 = gradc.exp %x : ({T4}) -> {T4}
  %1 = gradc.neg %0 : ({T4}) -> {T4}
  func.return %1 : {T4}"""))
    exp_result = f.body.ops[0].results[0]
    plan = plan_function(f, keep_alive=[exp_result])
    # A=exp escapes [0,2], B=neg escapes [1,2]: live s0 16, s1 32, s2 32; arena empty
    assert buffers(plan) == [[0, 2, -1, 16], [1, 2, -1, 16]]
    assert (plan.peak_bytes, plan.arena_bytes) == (32, 0)


def test_reads_inside_a_fused_body_keep_a_buffer_alive():
    # exp A [0,2] is read inside the kernel at step 2; neg B [1,2]; the kernel's result R
    # escapes [2,3]. Live: s0 16, s1 32, s2 48, s3 16 -> peak 48; A and B overlap: arena 32.
    f = parse_function(fn(f"""
  %0 = gradc.exp %x : ({T4}) -> {T4}
  %1 = gradc.neg %x : ({T4}) -> {T4}
  %2 = gradc.fused %1 ({{
  ^bb0(%a: {T4}):
    %3 = gradc.add %a, %0 : ({T4}, {T4}) -> {T4}
    gradc.yield %3 : {T4}
  }}) : ({T4}) -> {T4}
  func.return %2 : {T4}"""))
    plan = check_plan(f)
    assert buffers(plan) == [[0, 2, 0, 16], [1, 2, 16, 16], [2, 3, -1, 16]]
    assert (plan.peak_bytes, plan.arena_bytes) == (48, 32)


def test_annotate_and_pass_record_the_plan():
    text = fn(f"""
  %0 = gradc.exp %x : ({T4}) -> {T4}
  %1 = gradc.neg %0 : ({T4}) -> {T4}
  func.return %1 : {T4}""")
    f = parse_function(text)
    plan = annotate(f)
    assert f.attrs[ATTR_PEAK] == plan.peak_bytes == 32
    assert f.attrs[ATTR_ARENA] == plan.arena_bytes == 16
    assert f.attrs[ATTR_BUFFERS] == [[0, 1, 0, 16], [1, 2, -1, 16]]
    m = Module([parse_function(text)])
    pm = PassManager.parse("plan-buffers", verify_each=True)
    assert pm.run(m)
    assert m.functions[0].attrs == f.attrs
    assert not PassManager.parse("plan-buffers").run(m)    # the same plan again: no change


# ---- forward + backward -----------------------------------------------------------------------
CHAIN_JOINT = """\
func.func @chain_joint(%x: tensor<8xf32>, %ct0: tensor<f32>) -> (tensor<f32>, tensor<8xf32>) attributes {gradc.num_cotangents = 1, gradc.num_outputs = 1, gradc.wrt = [0]} {
  %0 = gradc.exp %x : (tensor<8xf32>) -> tensor<8xf32>
  %1 = gradc.constant {dtype = "float32", shape = [], value = 2.0} : () -> tensor<f32>
  %2 = gradc.mul %0, %1 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %3 = gradc.sin %2 : (tensor<8xf32>) -> tensor<8xf32>
  %4 = gradc.sum %3 {dims = [0], keepdim = false} : (tensor<8xf32>) -> tensor<f32>
  %5 = gradc.reshape %ct0 {shape = [1]} : (tensor<f32>) -> tensor<1xf32>
  %6 = gradc.expand %5 {shape = [8]} : (tensor<1xf32>) -> tensor<8xf32>
  %7 = gradc.cos %2 : (tensor<8xf32>) -> tensor<8xf32>
  %8 = gradc.mul %6, %7 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %9 = gradc.mul %8, %1 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %10 = gradc.mul %9, %0 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %4, %10 : tensor<f32>, tensor<8xf32>
}
"""


def test_partition_memory_save_all_by_hand():
    """sum(sin(2 exp(x))), x: 8 x f32 (32 B per vector, 4 B per scalar).

    save-all forward: exp A [0,6] (a residual: escapes), const K [1,2], mul M [2,5],
    sin S [3,4], sum R [4,6] (output), cos C [5,6] (residual). Live: s0 32, s1 36, s2 68,
    s3 A+M+S = 96, s4 A+M+S+R = 100, s5 A+M+R+C = 100, s6 68 -> forward peak 100.
    Residuals: cos and exp, 64 B. Backward reads them as arguments (free to its own plan):
    const K [0,4], reshape/expand of ct0 are views of an argument, mul X [3,4], mul Y [4,5],
    mul Z escapes [5,6]. Live: s0..s2 4, s3 36, s4 68, s5 64, s6 32 -> 68; plus the 64 B of
    residuals held while backward runs: 132.
    """
    p = partition(parse_function(CHAIN_JOINT), "save-all")
    mem = plan_partition(p)
    assert mem.saved_bytes == p.saved_bytes == 64
    assert mem.forward_peak == 100
    assert mem.backward.peak_bytes == 68
    assert mem.backward_peak == 64 + 68
    assert mem.after_backward == 0
    assert plan_partition(p, retain_graph=True).after_backward == 64
    assert mem.summary() == dict(forward_peak=100, backward_peak=132, saved_bytes=64, after_backward=0)


def test_partition_memory_min_memory_by_hand():
    """min-memory keeps only x (the caller's input: 0 B) and recomputes in backward.

    forward: exp A [0,2], const K [1,2], mul M [2,3], sin S [3,4], sum R escapes [4,5].
    Live: s0 32, s1 36, s2 68, s3 64, s4 36, s5 4 -> 68.
    backward: exp A [0,8], const K [1,7], mul M [2,5], two views of ct0, cos C [5,6],
    mul P [6,7], mul Q [7,8], mul R escapes [8,9]. Live: s0 32, s1 36, s2..s4 68,
    s5 A+K+M+C = 100, s6 A+K+C+P = 100, s7 A+K+P+Q = 100, s8 A+Q+R = 96, s9 32 -> 100.
    """
    p = partition(parse_function(CHAIN_JOINT), "min-memory")
    mem = plan_partition(p, retain_graph=True)
    assert p.saved_input_indices == [0]
    assert mem.summary() == dict(forward_peak=68, backward_peak=100, saved_bytes=0, after_backward=0)


def test_saved_input_that_is_not_free_is_a_copy_counted_in_saved_bytes():
    """An input the partition may not save for free (``free_inputs``: eager autograd would not
    save it, so the caller may change it in place before backward) is copied at the call: its
    bytes count as saved.  x (32 bytes) is still the cheapest thing to save here."""
    p = partition(parse_function(CHAIN_JOINT), "min-memory", free_inputs=[])
    assert p.saved_input_indices == [0] and p.copied_input_indices == [0]
    assert p.saved_bytes == 32 == plan_partition(p).saved_bytes
    assert partition(parse_function(CHAIN_JOINT), "min-memory", free_inputs=[0]).copied_input_indices == []


# ---- invariants on random programs ------------------------------------------------------------------
def check_plan(func):
    plan = plan_function(func)
    arena = [b for b in plan.buffers if not b.escapes]
    for b in plan.buffers:
        assert b.size == b.value.type.nbytes and 0 <= b.first <= b.last <= plan.steps
        assert (b.offset == -1) == b.escapes
    for i, a in enumerate(arena):
        assert a.offset >= 0 and a.offset + a.size <= plan.arena_bytes
        for b in arena[i + 1:]:
            if not (a.last < b.first or b.last < a.first) and a.size and b.size:
                assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset, \
                    f"buffers {a.first}-{a.last} and {b.first}-{b.last} overlap in the arena"
    live_arena = max((sum(b.size for b in arena if b.first <= s <= b.last) for s in range(plan.steps + 1)),
                     default=0)
    assert live_arena <= plan.arena_bytes <= sum(b.size for b in arena)
    assert plan.peak_bytes == max((plan.live_bytes_at(s) for s in range(plan.steps + 1)), default=0)
    # every op result has a buffer unless it is a view
    owned = {id(b.value) for b in plan.buffers}
    for op in func.body.ops[:-1]:
        if op.opdef is None or "view" not in op.opdef.traits:
            assert all(id(r) in owned for r in op.results)
    # soundness: whatever an op reads (views resolved to their buffer, reads inside a fused
    # body included) is live at that op's step
    buffer_of = {}
    for b in plan.buffers:
        buffer_of[id(b.value)] = b
        for a in b.aliases:
            buffer_of[id(a)] = b
    for step, op in enumerate(func.body.ops[:-1]):
        for inner in op.walk():
            for v in inner.operands:
                b = buffer_of.get(id(v))
                if b is not None:
                    assert b.first <= step <= b.last, f"{inner.name} at step {step} reads a dead buffer"
    return plan


@pytest.mark.parametrize("seed", range(120))
def test_plans_are_consistent_on_random_programs(seed):
    prog = seeded_program(seed)
    f = prog.trace()
    check_plan(f)
    if not any(s.requires_grad for s in prog.specs):
        return
    joint = clean(verified(differentiate(f)))
    check_plan(joint)
    for policy in POLICIES:
        p = split_and_fuse(joint, policy)
        check_plan(p.forward)
        check_plan(p.backward)
        mem = plan_partition(p)
        assert mem.backward_peak == mem.saved_bytes + mem.backward.peak_bytes
