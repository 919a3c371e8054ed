"""The graph from the autograd walkthrough in tests/seeds/003: l1 = inp*w1; l2 = l1+w2; l3 = l1*w3.

Look at it at every stage of the compiler:

    gradc dump-ir examples/seed003.py:loss --arg inp=f32[2,2]:grad \\
        --arg w1=f32[]:grad --arg w2=f32[]:grad --arg w3=f32[]:grad --stage adjoint
    gradc graph examples/seed003.py:loss --arg inp=f32[2,2]:grad \\
        --arg w1=f32[]:grad --arg w2=f32[]:grad --arg w3=f32[]:grad -o loss.svg

Run it (``python examples/seed003.py``) to compare compiled and eager gradients.
"""
import gradc


def loss(inp, w1, w2, w3):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    return (l2 * l3).mean()


if __name__ == "__main__":
    def inputs():
        return (gradc.ones([2, 2], requires_grad=True), gradc.tensor(2.0, requires_grad=True),
                gradc.tensor(3.0, requires_grad=True), gradc.tensor(4.0, requires_grad=True))

    eager, compiled = inputs(), inputs()
    loss(*eager).backward()
    out = gradc.compile(loss)(*compiled)
    out.backward()
    print("loss", out.item())
    for name, a, b in zip(("inp", "w1", "w2", "w3"), eager, compiled):
        print(f"grad {name}: eager {a.grad.tolist()}  compiled {b.grad.tolist()}")
