"""ember.func: torch.func's function transforms, over pytrees (dicts, tuples, lists) of tensors.

- reverse mode: :func:`grad`, :func:`grad_and_value`, :func:`vjp`, :func:`jacrev`;
- forward mode (``ember.autograd.forward_ad``): :func:`jvp`, :func:`jacfwd`, :func:`hessian`;
- :func:`vmap`, a loop over slices (ember has no batching rules);
- modules as functions: :func:`functional_call`, :func:`stack_module_state`,
  :func:`replace_all_batch_norm_modules_`.

Per-sample gradients as torch.func's tutorial writes them::

    params = {k: v.detach() for k, v in model.named_parameters()}
    def loss(params, x, y):
        return F.cross_entropy(functional_call(model, params, (x.unsqueeze(0),)), y.unsqueeze(0))
    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)  # dict of (N, ...)
"""

from ._forward_mode import hessian, jacfwd, jvp
from ._module_state import functional_call, replace_all_batch_norm_modules_, stack_module_state
from ._reverse_mode import grad, grad_and_value, jacrev, vjp
from ._vmap import vmap

__all__ = [
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "replace_all_batch_norm_modules_",
    "stack_module_state",
    "vjp",
    "vmap",
]
