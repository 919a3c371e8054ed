"""A first look at gradc: eager autograd with PyTorch's semantics."""
import gradc as torch

inp = torch.ones([2, 2], requires_grad=True)
w1 = torch.tensor(2.0, requires_grad=True)
w2 = torch.tensor(3.0, requires_grad=True)
w3 = torch.tensor(4.0, requires_grad=True)
l1 = inp * w1
l2 = l1 + w2
l3 = l1 * w3
loss = (l2 * l3).mean()
print(loss)
loss.backward()
print(w1.grad, w2.grad, w3.grad)
print(inp.grad)
