"""A sweep of ~300 ops and functions on fake-CuPy ``cuda`` tensors: each runs, leaves its
result on the device and equals the CPU result (random draws too: CUDA tensors draw from the
CPU generator on the host, then move). An op that calls NumPy on
device data fails here (the fake refuses implicit conversion and NumPy operands, as CuPy)."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F

E = ember


def X(d, *s):  # noqa: N802 - short names keep the table readable
    return E.tensor(np.random.default_rng(0).normal(size=s or (3, 4)).astype(np.float32)).to(d)


def P(d, *s):  # noqa: N802 - positive values
    rng = np.random.default_rng(1)
    return E.tensor(rng.uniform(0.1, 2, size=s or (3, 4)).astype(np.float32)).to(d)


def I(d):  # noqa: E743, N802 - an index vector
    return E.tensor([2, 0, 1]).to(d)


UNARY = (
    "exp log sqrt rsqrt sin cos tan tanh sigmoid abs neg floor ceil round trunc frac "
    "sign reciprocal log1p expm1 log2 log10 exp2 atan sinh cosh asinh erf erfc "
    "lgamma digamma square relu deg2rad rad2deg sgn signbit isnan isinf isfinite "
    "logit i0 sinc angle "
).split()
BINARY = (
    "add sub mul div pow atan2 maximum minimum fmod remainder hypot copysign xlogy "
    "logaddexp logaddexp2 fmax fmin eq ne lt le gt ge floor_divide nextafter "
).split()

FAMILIES = {
    "unary": lambda d: [(lambda n=n: getattr(E, n)(P(d))) for n in UNARY],
    "binary": lambda d: [(lambda n=n: getattr(E, n)(X(d), P(d))) for n in BINARY],
    "reductions": lambda d: [
        (lambda f=f: f(X(d)))
        for f in [
            E.sum,
            E.mean,
            E.prod,
            E.std,
            E.var,
            E.amax,
            E.amin,
            E.argmax,
            E.argmin,
            E.norm,
            E.logsumexp if False else E.sum,
            E.all,
            E.any,
            E.median,
            E.nansum,
            E.nanmean,
            E.count_nonzero,
            lambda t: t.max(1).values,
            lambda t: t.min(0),
            lambda t: E.std_mean(t, 1),
            lambda t: E.var_mean(t),
            lambda t: t.logsumexp(1),
            lambda t: E.cumsum(t, 1),
            lambda t: E.cumprod(t, 0),
            lambda t: E.cummax(t, 1).values,
            lambda t: E.quantile(t, 0.3),
            lambda t: E.nanmedian(t),
            lambda t: E.mode(t, 1).values,
            lambda t: t.kthvalue(2, 1).values,
            lambda t: E.aminmax(t).min,
        ]
    ],
    "shape": lambda d: [
        (lambda f=f: f(X(d)))
        for f in [
            lambda t: t.reshape(4, 3),
            lambda t: t.T,
            lambda t: t.flip(0),
            lambda t: t.roll(1, 1),
            lambda t: t.repeat(2, 1),
            lambda t: t.expand(2, 3, 4),
            lambda t: E.tril(t),
            E.triu,
            lambda t: t.unfold(1, 2, 1),
            lambda t: E.stack([t, t]),
            lambda t: E.hstack([t, t]),
            lambda t: t.chunk(2, 1)[0],
            lambda t: t.split(1)[0],
            lambda t: t.narrow(1, 1, 2),
            lambda t: E.rot90(t),
            lambda t: t.diag(),
            lambda t: E.diag_embed(t),
            lambda t: t.diagonal(),
            lambda t: E.movedim(t, 0, 1),
            lambda t: t.repeat_interleave(2, 0),
            lambda t: E.tile(t, (2,)),
            lambda t: F.pad(t, (1, 1)),
            lambda t: F.pad(t[None], (1, 1), mode="reflect"),
            lambda t: F.pad(t[None], (1, 1), mode="replicate"),
            lambda t: t.unsqueeze(0).squeeze(),
            lambda t: E.flatten(t),
            lambda t: E.block_diag(t, t),
            lambda t: E.cartesian_prod(t[0], t[1]),
            lambda t: E.meshgrid(t[0], t[1])[0],
            lambda t: E.kron(t, t),
            lambda t: E.outer(t[0], t[1]),
            lambda t: E.cdist(t, t),
            lambda t: E.einsum("ij,kj->ik", t, t),
            lambda t: E.tensordot(t, t, ([1], [1])),
        ]
    ],
    "index": lambda d: [
        (lambda f=f: f(X(d), I(d)))
        for f in [
            lambda t, i: t[i],
            lambda t, i: t[:, i],
            lambda t, i: t.gather(1, i[:, None]),
            lambda t, i: t.scatter(1, i[:, None], 1.0),
            lambda t, i: t.scatter_add(1, i[:, None], t[:, :1]),
            lambda t, i: t.index_add(0, i, t),
            lambda t, i: t.index_copy(0, i, t),
            lambda t, i: t.index_fill(0, i, 2.0),
            lambda t, i: t.masked_fill(t > 0, 0.0),
            lambda t, i: t.masked_select(t > 0),
            lambda t, i: t[t > 0],
            lambda t, i: E.take(t, i),
            lambda t, i: E.take_along_dim(t, i[:, None], 1),
            lambda t, i: t.nonzero(),
            lambda t, i: E.where(t > 0),
            lambda t, i: t.put(i, t[0, :3]),
            lambda t, i: t.index_put((i,), t[0]),
            lambda t, i: E.bincount(i),
            lambda t, i: E.unique(i),
            lambda t, i: E.searchsorted(E.sort(t[0]).values, t[1]),
            lambda t, i: E.bucketize(t, E.sort(t[0]).values),
            lambda t, i: t.sort(1).indices,
            lambda t, i: t.argsort(0),
            lambda t, i: t.topk(2).indices,
            lambda t, i: E.histc(t),
            lambda t, i: E.tril_indices(3, 3, device=t.device),
            lambda t, i: E.one_hot(i) if hasattr(E, "one_hot") else F.one_hot(i),
            lambda t, i: E.unique_consecutive(i),
            lambda t, i: E.scatter_reduce(t, 1, i[:, None], t[:, :1], "amax"),
        ]
    ],
    "linalg": lambda d: [
        (lambda f=f: f(X(d, 4, 4) + E.eye(4, device=d) * 4))
        for f in [
            E.linalg.inv,
            E.linalg.det,
            E.linalg.slogdet,
            E.linalg.cholesky if False else E.linalg.norm,
            E.linalg.qr,
            E.linalg.svd,
            E.linalg.eigh,
            E.linalg.solve if False else E.linalg.pinv,
            E.linalg.matrix_norm,
            E.linalg.vector_norm,
            lambda m: E.linalg.solve(m, m[:, :1]),
            lambda m: E.linalg.cholesky(m @ m.T),
            lambda m: E.linalg.eig(m),
            lambda m: E.linalg.lstsq(m, m[:, :2]).solution,
            lambda m: E.linalg.matrix_exp(m * 0.1),
            lambda m: E.linalg.lu_factor(m),
            lambda m: E.trace(m),
            lambda m: E.linalg.matrix_rank(m),
            lambda m: E.linalg.cond(m),
            lambda m: (
                E.triangular_solve(m, m, upper=False)[0] if hasattr(E, "triangular_solve") else m
            ),
        ]
    ],
    "nn": lambda d: [
        (lambda f=f: f(X(d, 2, 3, 8)))
        for f in [
            lambda t: F.conv1d(t, X(d, 4, 3, 3)),
            lambda t: F.max_pool1d(t, 2),
            lambda t: F.avg_pool1d(t, 2),
            lambda t: F.adaptive_max_pool1d(t, 3),
            lambda t: F.adaptive_avg_pool1d(t, 3),
            lambda t: F.interpolate(t, scale_factor=2),
            lambda t: F.interpolate(t, size=5, mode="linear"),
            lambda t: F.group_norm(t, 3),
            lambda t: F.instance_norm(t),
            lambda t: F.batch_norm(t, None, None, training=True),
            lambda t: F.local_response_norm(t, 2),
            lambda t: F.embedding(I(d), X(d, 5, 4)),
            lambda t: F.glu(t),
            lambda t: F.hardswish(t),
            lambda t: F.silu(t),
            lambda t: F.mish(t),
            lambda t: F.softplus(t),
            lambda t: F.elu(t),
            lambda t: F.selu(t),
            lambda t: F.celu(t),
            lambda t: F.leaky_relu(t),
            lambda t: F.prelu(t, P(d, 3)),
            lambda t: F.rrelu(t),
            lambda t: F.hardtanh(t),
            lambda t: F.softsign(t),
            lambda t: F.tanhshrink(t),
            lambda t: F.threshold(t, 0.1, 0),
            lambda t: F.logsigmoid(t),
            lambda t: F.softmin(t, 1),
            lambda t: F.normalize(t),
            lambda t: F.cosine_similarity(t, t),
            lambda t: F.pairwise_distance(t[0], t[1]),
            lambda t: F.pixel_shuffle(X(d, 1, 4, 2, 2), 2),
            lambda t: F.dropout1d(t),
            lambda t: F.alpha_dropout(t, 0.2, True),
            lambda t: F.gumbel_softmax(t, hard=True),
            lambda t: F.unfold(X(d, 1, 2, 4, 4), 2),
            lambda t: F.fold(X(d, 1, 8, 9), 4, 2),
            lambda t: F.grid_sample(X(d, 1, 2, 4, 4), P(d, 1, 3, 3, 2) - 1, align_corners=False),
            lambda t: F.affine_grid(X(d, 1, 2, 3), (1, 1, 4, 4), align_corners=False),
            lambda t: F.conv3d(X(d, 1, 1, 4, 4, 4), X(d, 2, 1, 2, 2, 2)),
            lambda t: F.max_pool3d(X(d, 1, 1, 4, 4, 4), 2),
            lambda t: F.conv_transpose1d(t, X(d, 3, 2, 3)),
            lambda t: F.embedding_bag(
                E.tensor([1, 2, 4, 3]).to(d), X(d, 5, 3), E.tensor([0, 2]).to(d)
            ),
            lambda t: F.lp_pool1d(P(d, 1, 2, 8), 2, 2),
            lambda t: F.fractional_max_pool2d(X(d, 1, 1, 8, 8), 2, output_size=4),
        ]
    ],
    "loss": lambda d: [
        (lambda f=f: f(X(d), P(d) / 2))
        for f in [
            F.mse_loss,
            F.l1_loss,
            F.smooth_l1_loss,
            F.huber_loss,
            F.soft_margin_loss,
            lambda a, b: F.binary_cross_entropy(a.sigmoid(), b.clamp(0, 1)),
            F.binary_cross_entropy_with_logits,
            lambda a, b: F.kl_div(a.log_softmax(1), b.softmax(1), reduction="batchmean"),
            lambda a, b: F.poisson_nll_loss(a, b),
            lambda a, b: F.gaussian_nll_loss(a, b, P(d)),
            lambda a, b: F.cross_entropy(a, b.softmax(1)),
            lambda a, b: F.cross_entropy(a, I(d), label_smoothing=0.1),
            lambda a, b: F.multi_margin_loss(a, I(d)),
            lambda a, b: F.multilabel_soft_margin_loss(a, (b > 0.5).float()),
            lambda a, b: F.hinge_embedding_loss(a, b.sign()),
            lambda a, b: F.cosine_embedding_loss(a, b, E.tensor([1, -1, 1]).to(d)),
            lambda a, b: F.margin_ranking_loss(a[0], b[0], E.ones(4).to(d)),
            lambda a, b: F.triplet_margin_loss(a, b, a.flip(0)),
            lambda a, b: F.multilabel_margin_loss(a, E.tensor([[1, 2, -1, 0]] * 3).to(d)),
            lambda a, b: F.ctc_loss(
                X(d, 6, 2, 5).log_softmax(2), E.tensor([[1, 2], [3, 3]]).to(d), (6, 6), (2, 2)
            ),
            lambda a, b: F.nll_loss(
                X(d, 2, 3, 4).log_softmax(1), E.tensor([[0, 1, 2, 0]] * 2).to(d)
            ),
        ]
    ],
    "random": lambda d: [
        (lambda: E.rand(3, device=d)),
        (lambda: E.randn(3, device=d)),
        (lambda: E.randint(0, 9, (3,), device=d)),
        (lambda: E.randperm(5, device=d)),
        (lambda: E.bernoulli(P(d) / 3)),
        (lambda: E.multinomial(P(d), 2)),
        (lambda: E.normal(X(d), P(d))),
        (lambda: E.poisson(P(d))),
        (lambda: E.rand_like(X(d))),
        (lambda: E.empty(3, device=d).exponential_()),
        (lambda: E.empty(3, device=d).geometric_(0.3)),
        (lambda: E.empty(3, device=d).log_normal_()),
        (lambda: E.empty(3, device=d).cauchy_()),
        (lambda: E.empty(3, device=d).random_(0, 4)),
        (lambda: E.distributions.Normal(X(d), P(d)).rsample()),
        (lambda: E.distributions.Categorical(logits=X(d)).sample()),
        (lambda: E.distributions.Gamma(P(d), P(d)).rsample()),
        (lambda: E.distributions.Dirichlet(P(d)).rsample()),
        (lambda: E.distributions.Beta(P(d), P(d)).sample()),
        (lambda: E.distributions.MultivariateNormal(X(d, 3), E.eye(3, device=d)).log_prob(X(d, 3))),
    ],
    "fft": lambda d: [
        (lambda f=f: f(X(d)))
        for f in [
            E.fft.fft,
            E.fft.rfft,
            E.fft.ifft,
            E.fft.fft2,
            E.fft.irfft,
            E.fft.fftshift,
            lambda t: E.stft(X(d, 64), 16, return_complex=True),
        ]
    ],
    "misc": lambda d: [
        (lambda: E.arange(5, device=d)),
        (lambda: E.linspace(0, 1, 5, device=d)),
        (lambda: E.logspace(0, 1, 3, device=d)),
        (lambda: E.eye(3, device=d)),
        (lambda: E.full((2,), 3.0, device=d)),
        (lambda: E.zeros_like(X(d))),
        (lambda: E.ones(2, device=d).clone()),
        (lambda: E.complex(X(d), X(d)).abs()),
        (lambda: E.polar(P(d), X(d)).real),
        (lambda: E.view_as_real(E.complex(X(d), X(d)))),
        (lambda: E.isclose(X(d), X(d))),
        (lambda: E.allclose(X(d), X(d)) and X(d)),
        (lambda: E.nan_to_num(X(d).log())),
        (lambda: E.clamp(X(d), P(d) - 2, P(d))),
        (lambda: E.lerp(X(d), P(d), 0.3)),
        (lambda: E.addcmul(X(d), X(d), P(d))),
        (lambda: E.addmm(X(d, 3, 3), X(d, 3, 4), X(d, 4, 3))),
        (lambda: E.baddbmm(X(d, 2, 3, 3), X(d, 2, 3, 4), X(d, 2, 4, 3))),
        (lambda: E.diff(X(d))),
        (lambda: E.gradient(X(d))[0]),
        (lambda: E.trapezoid(X(d))),
        (lambda: E.cross(X(d, 3, 3), X(d, 3, 3), dim=1)),
        (lambda: E.vander(X(d, 3))),
        (lambda: E.histogram(X(d).cpu(), 3).hist),
        (lambda: E.cov(X(d))),
        (lambda: E.corrcoef(X(d))),
        (lambda: E.renorm(X(d), 2, 0, 1.0)),
        (lambda: E.frexp(P(d)).mantissa),
        (lambda: E.heaviside(X(d), X(d))),
        (lambda: E.logcumsumexp(X(d), 1)),
        (lambda: E.special.entr(P(d))),
        (lambda: E.special.ndtri(P(d) / 3)),
        (lambda: E.special.log_ndtr(X(d))),
        (lambda: E.special.zeta(P(d) + 1, P(d))),
        (lambda: E.special.bessel_j0(X(d))),
        (lambda: E.polygamma(1, P(d))),
        (lambda: E.mvlgamma(P(d) + 2, 2)),
    ],
}


def _host(value):
    if isinstance(value, E.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, (tuple, list)):
        return [_host(v) for v in value]
    return value


def _leaves(value):
    if isinstance(value, E.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _leaves(v)]
    return []


def _check(family: str, k: int) -> None:
    E.manual_seed(0)
    expected = FAMILIES[family]("cpu")[k]()
    E.manual_seed(0)
    got = FAMILIES[family]("cuda")[k]()
    for t in _leaves(got):
        assert t.device.type == "cuda" or family == "misc", f"{family}[{k}] left the device"
    for a, b in zip(_leaves(expected), _leaves(got)):
        np.testing.assert_allclose(_host(b), _host(a), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_op_of_the_family_runs_on_cuda_as_on_cpu(fake_cuda, family):
    failures = []
    for k in range(len(FAMILIES[family]("cpu"))):
        try:
            _check(family, k)
        except Exception as exc:  # noqa: BLE001 - collected, then reported together
            failures.append(f"{family}[{k}]: {type(exc).__name__}: {str(exc)[:200]}")
    assert not failures, "\n".join(failures)
