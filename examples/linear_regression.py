"""Fit y = 2x + 1 with ember, the way a PyTorch tutorial does it.

Run: uv run python examples/linear_regression.py
"""

import ember as torch

x = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
y = torch.tensor([[3.0], [5.0], [7.0], [9.0]])

w = torch.tensor([[0.5]], requires_grad=True)
b = torch.tensor([0.0], requires_grad=True)
lr = 0.01

for epoch in range(1, 1001):
    pred = x.mm(w).add(b)
    loss = pred.sub(y).pow(2).mean()
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
        b -= lr * b.grad
    w.grad.zero_()
    b.grad.zero_()
    if epoch % 100 == 0:
        print(f"epoch {epoch:4d}  loss {loss.item():.6f}")

print(f"learned w = {w.item():.4f}, b = {b.item():.4f}  (true: w = 2, b = 1)")
