"""Fit a random degree-4 polynomial with one linear layer (pytorch/examples: regression)."""

import argparse

import ember as torch
import ember.nn.functional as F

POLY_DEGREE = 4


def make_features(x):
    """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
    x = x.unsqueeze(1)
    return torch.cat([x**i for i in range(1, POLY_DEGREE + 1)], 1)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-steps", type=int, default=2000)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    W_target = torch.randn(POLY_DEGREE, 1) * 5
    b_target = torch.randn(1) * 5

    def f(x):
        return x.mm(W_target) + b_target.item()

    def get_batch(batch_size=32):
        random = torch.randn(batch_size)
        x = make_features(random)
        y = f(x)
        return x, y

    fc = torch.nn.Linear(W_target.size(0), 1)
    first = None
    batches = 0
    while batches < args.max_steps:
        batches += 1
        batch_x, batch_y = get_batch()
        fc.zero_grad()
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        loss = output.item()
        first = loss if first is None else first
        output.backward()
        for param in fc.parameters():
            param.data.add_(-0.1 * param.grad)
        if loss < 1e-3:
            break
    print(f"Loss: {loss:.6f} after {batches} batches (first {first:.3f})")
    print("==> Learned function:\t", fc.weight.view(-1).tolist(), fc.bias.item())
    print("==> Actual function:\t", W_target.view(-1).tolist(), b_target.item())
    return first, loss


if __name__ == "__main__":
    main()
