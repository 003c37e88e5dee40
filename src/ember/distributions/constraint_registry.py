"""``biject_to`` and ``transform_to``: from a constraint to a transform whose codomain it is.

``biject_to(c)`` gives a bijection (so log-det-Jacobians are exact, as HMC needs);
``transform_to(c)`` gives any map onto ``c`` (cheaper, e.g. softmax onto the simplex).

Example::
    >>> t = transform_to(constraints.positive)
    >>> t(ember.tensor(0.0))
    tensor(1.)
"""

from __future__ import annotations

from functools import partial

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Constraint types -> factories ``f(constraint) -> Transform``."""

    def __init__(self) -> None:
        self._registry: dict = {}
        super().__init__()

    def register(self, constraint, factory=None):
        """Register ``factory`` for a constraint (its type); usable as a decorator."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(
                "Expected constraint to be either a Constraint subclass or instance, but got "
                f"{constraint}"
            )
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints"
            ) from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _register_in_both(constraint):
    """Register ``build(registry, constraint)`` in both registries, so that a structured
    transform's parts come from the registry asked for the whole (bijections from biject_to)."""

    def decorator(build):
        for registry in (biject_to, transform_to):
            registry.register(constraint, partial(build, registry))
        return build

    return decorator


@biject_to.register(constraints.real)
@transform_to.register(constraints.real)
def _transform_to_real(constraint):
    return transforms.identity_transform


@_register_in_both(constraints.independent)
def _transform_to_independent(registry, constraint):
    base = registry(constraint.base_constraint)
    return transforms.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


@biject_to.register(constraints.positive)
@biject_to.register(constraints.nonnegative)
@transform_to.register(constraints.positive)
@transform_to.register(constraints.nonnegative)
def _transform_to_positive(constraint):
    return transforms.ExpTransform()


@biject_to.register(constraints.greater_than)
@biject_to.register(constraints.greater_than_eq)
@transform_to.register(constraints.greater_than)
@transform_to.register(constraints.greater_than_eq)
def _transform_to_greater_than(constraint):
    return transforms.ComposeTransform(
        [transforms.ExpTransform(), transforms.AffineTransform(constraint.lower_bound, 1)]
    )


@biject_to.register(constraints.less_than)
@transform_to.register(constraints.less_than)
def _transform_to_less_than(constraint):
    return transforms.ComposeTransform(
        [transforms.ExpTransform(), transforms.AffineTransform(constraint.upper_bound, -1)]
    )


@biject_to.register(constraints.interval)
@biject_to.register(constraints.half_open_interval)
@transform_to.register(constraints.interval)
@transform_to.register(constraints.half_open_interval)
def _transform_to_interval(constraint):
    lower, upper = constraint.lower_bound, constraint.upper_bound
    unit = isinstance(lower, (int, float)) and isinstance(upper, (int, float))
    if unit and lower == 0 and upper == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform(
        [transforms.SigmoidTransform(), transforms.AffineTransform(lower, upper - lower)]
    )


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint):
    return transforms.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint):
    return transforms.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint):
    return transforms.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint):
    return transforms.PositiveDefiniteTransform()


@biject_to.register(constraints.corr_cholesky)
@transform_to.register(constraints.corr_cholesky)
def _transform_to_corr_cholesky(constraint):
    return transforms.CorrCholeskyTransform()


@_register_in_both(constraints.cat)
def _transform_to_cat(registry, constraint):
    parts = [registry(c) for c in constraint.cseq]
    return transforms.CatTransform(parts, constraint.dim, constraint.lengths)


@_register_in_both(constraints.stack)
def _transform_to_stack(registry, constraint):
    return transforms.StackTransform([registry(c) for c in constraint.cseq], constraint.dim)
