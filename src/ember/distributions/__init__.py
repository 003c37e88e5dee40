"""``ember.distributions``: probability distributions with PyTorch's API, built from
differentiable ember ops so that ``log_prob``, ``entropy`` and ``rsample`` give gradients.

Example::
    >>> import ember as torch
    >>> from ember.distributions import Normal
    >>> loc = torch.tensor(0.0, requires_grad=True)
    >>> Normal(loc, 1.0).log_prob(torch.tensor(1.0)).backward()
    >>> loc.grad
    tensor(1.)
"""

from . import constraints, transforms
from .bernoulli import Bernoulli
from .categorical import Categorical
from .cauchy import Cauchy
from .constraint_registry import biject_to, transform_to
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F403
from .uniform import Uniform

__all__ = [
    "Bernoulli",
    "Categorical",
    "Cauchy",
    "Distribution",
    "Exponential",
    "ExponentialFamily",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "Laplace",
    "LogNormal",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "TransformedDistribution",
    "Uniform",
    "biject_to",
    "constraints",
    "kl_divergence",
    "register_kl",
    "transform_to",
    "transforms",
]
__all__.extend(transforms.__all__)
