"""Ordinary PyTorch programs that use torch.distributions, run with ``import ember as torch``."""

from __future__ import annotations

import numpy as np

import ember as torch


def test_maximum_likelihood_fit_of_a_normal_recovers_mean_and_std():
    torch.manual_seed(0)
    data = torch.randn(500, dtype=torch.float64) * 2.0 + 3.0
    loc = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    log_scale = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([loc, log_scale], lr=0.2)
    for _ in range(100):
        opt.zero_grad()
        nll = -torch.distributions.Normal(loc, log_scale.exp()).log_prob(data).mean()
        nll.backward()
        opt.step()
    np.testing.assert_allclose(loc.item(), data.mean().item(), atol=1e-2)
    np.testing.assert_allclose(log_scale.exp().item(), data.std(unbiased=False).item(), rtol=1e-2)


def test_reinforce_gradient_of_a_categorical_policy():
    logits = torch.tensor([0.0, 0.0, 0.0], requires_grad=True)
    policy = torch.distributions.Categorical(logits=logits)
    actions = torch.tensor([2, 2, 0])
    rewards = torch.tensor([1.0, 1.0, -1.0])
    loss = -(policy.log_prob(actions) * rewards).sum()
    loss.backward()
    # d/dlogits of -Σ r log softmax(logits)[a] = -Σ r (onehot(a) - p)
    p = np.full(3, 1 / 3)
    expected = -(1.0 * (np.eye(3)[2] - p) * 2 + -1.0 * (np.eye(3)[0] - p))
    np.testing.assert_allclose(logits.grad.numpy(), expected, rtol=1e-6)


def test_vae_style_elbo_with_rsample_and_kl():
    torch.manual_seed(0)
    mu = torch.tensor([[0.5, -0.5]], requires_grad=True)
    log_var = torch.tensor([[0.1, -0.2]], requires_grad=True)
    q = torch.distributions.Normal(mu, (0.5 * log_var).exp())
    prior = torch.distributions.Normal(torch.zeros_like(mu), torch.ones_like(mu))
    z = q.rsample()
    recon = torch.distributions.Bernoulli(logits=z).log_prob(torch.ones_like(z)).sum()
    kl = torch.distributions.kl_divergence(q, prior).sum()
    (kl - recon).backward()
    assert mu.grad is not None and log_var.grad is not None
    # the KL part alone: d/dmu = mu, d/dlogvar = (e^logvar - 1) / 2
    q2 = torch.distributions.Normal(mu, (0.5 * log_var).exp())
    grads = torch.autograd.grad(torch.distributions.kl_divergence(q2, prior).sum(), [mu, log_var])
    np.testing.assert_allclose(grads[0].numpy(), mu.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(
        grads[1].numpy(), (np.exp(log_var.detach().numpy()) - 1) / 2, rtol=1e-5
    )


def test_tanh_squashed_gaussian_policy_log_prob():
    base = torch.distributions.Normal(torch.zeros(2), torch.ones(2))
    squashed = torch.distributions.TransformedDistribution(
        base, [torch.distributions.TanhTransform(cache_size=1)]
    )
    a = squashed.rsample((5,))
    lp = squashed.log_prob(a)
    x = torch.atanh(a)
    expected = base.log_prob(x) - torch.log(1 - a.pow(2))
    np.testing.assert_allclose(lp.detach().numpy(), expected.detach().numpy(), atol=1e-4)
