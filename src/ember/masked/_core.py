"""``MaskedTensor``: a tensor's data with a same-shaped bool mask saying which elements are
specified (torch.masked's prototype API).

ember's MaskedTensor is a plain object rather than a Tensor subclass: its methods cover what
torch programs reach for — the masked reductions (``mt.sum(1)`` is a MaskedTensor whose mask
says which slices kept an element), elementwise ops and arithmetic between MaskedTensors of
one mask, indexing and shape ops on data and mask together, ``to_tensor``, ``get_data``,
``get_mask`` and torch's repr. ``ember.masked.sum(mt)`` and the other functions read its mask.
Top-level functions (``ember.sum(mt)``) do not dispatch to it.
"""

from __future__ import annotations

import warnings

from .._dtype import bool_, float16, float32, float64, int8, int16, int32, int64
from .._tensor import Tensor

_SUPPORTED_DTYPES = frozenset({float16, float32, float64, bool_, int8, int16, int32, int64})
# methods applied to data and mask alike (the mask follows the elements)
_STRUCTURAL = frozenset(
    "t transpose permute reshape view flatten squeeze unsqueeze flip expand contiguous "
    "clone detach cpu narrow select movedim swapaxes".split()
)
# methods applied to the data only, the mask unchanged (elementwise)
_ELEMENTWISE = frozenset(
    "abs neg exp expm1 log log1p log2 log10 sqrt rsqrt sin cos tan tanh sigmoid relu "
    "floor ceil round trunc sign square reciprocal pow clamp clamp_min clamp_max "
    "nan_to_num float double half int long bool to".split()
)
_REDUCTIONS = frozenset(
    "sum prod amax amin argmax argmin mean median norm var std logsumexp".split()
)


def is_masked_tensor(value) -> bool:
    return isinstance(value, MaskedTensor)


class MaskedTensor:
    """``data`` with a bool ``mask`` of its specified elements.

    Example::
        >>> from ember.masked import masked_tensor
        >>> mt = masked_tensor(ember.tensor([1.0, 2.0, 3.0]), ember.tensor([True, False, True]))
        >>> mt.sum()
        MaskedTensor(  4.0000, True)
    """

    __array_priority__ = 1000  # NumPy scalars defer to our reflected operators

    def __init__(self, data, mask, requires_grad: bool = False):
        if is_masked_tensor(data) or not isinstance(data, Tensor):
            raise TypeError("data must be a Tensor")
        if is_masked_tensor(mask) or not isinstance(mask, Tensor):
            raise TypeError("mask must be a Tensor")
        if data.layout != mask.layout:
            raise TypeError("data and mask must have the same layout.")
        if mask.dtype != bool_:
            raise TypeError("mask must have dtype bool.")
        if data.dtype not in _SUPPORTED_DTYPES:
            raise TypeError(f"{data.dtype} is not supported in MaskedTensor.")
        if data.dim() != mask.dim():
            raise ValueError("data.dim() must equal mask.dim()")
        if tuple(data.shape) != tuple(mask.shape):
            raise ValueError("data.size() must equal mask.size()")
        if requires_grad:
            data = data.detach().clone().requires_grad_(True)
        self._masked_data = data
        self._masked_mask = mask

    @classmethod
    def _from_values(cls, data, mask):
        """A MaskedTensor sharing ``data`` (gradients flow to it): ``as_masked_tensor``."""
        out = cls.__new__(cls)
        cls.__init__(out, data, mask)
        return out

    # --- the parts ---------------------------------------------------------------------
    def get_data(self) -> Tensor:
        return self._masked_data

    def get_mask(self) -> Tensor:
        return self._masked_mask

    def to_tensor(self, value) -> Tensor:
        """The data with every masked-out element replaced by ``value``."""
        return self._masked_data.masked_fill(~self._masked_mask, value)

    def is_sparse_coo(self) -> bool:
        return self.layout == "sparse_coo"

    def is_sparse_csr(self) -> bool:
        return self.layout == "sparse_csr"

    @property
    def is_sparse(self) -> bool:
        return self.is_sparse_coo() or self.is_sparse_csr()

    # --- tensor facts ------------------------------------------------------------------
    shape = property(lambda self: self._masked_data.shape)
    dtype = property(lambda self: self._masked_data.dtype)
    device = property(lambda self: self._masked_data.device)
    layout = property(lambda self: self._masked_data.layout)
    ndim = property(lambda self: self._masked_data.ndim)
    requires_grad = property(lambda self: self._masked_data.requires_grad)
    grad = property(lambda self: self._masked_data.grad)

    def dim(self) -> int:
        return self._masked_data.dim()

    def size(self, dim=None):
        return self._masked_data.size() if dim is None else self._masked_data.size(dim)

    def numel(self) -> int:
        return self._masked_data.numel()

    def __len__(self) -> int:
        return len(self._masked_data)

    def requires_grad_(self, requires_grad: bool = True) -> MaskedTensor:
        self._masked_data.requires_grad_(requires_grad)
        return self

    def backward(self, gradient=None, *args, **kwargs) -> None:
        if is_masked_tensor(gradient):
            gradient = gradient.get_data()
        self._masked_data.backward(gradient, *args, **kwargs)

    # --- ops ---------------------------------------------------------------------------
    def __getitem__(self, key) -> MaskedTensor:
        return MaskedTensor._from_values(self._masked_data[key], self._masked_mask[key])

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in _REDUCTIONS:
            return lambda *args, **kwargs: _reduce(name, self, *args, **kwargs)
        if name in _STRUCTURAL:

            def structural(*args, **kwargs):
                data = getattr(self._masked_data, name)(*args, **kwargs)
                mask = getattr(self._masked_mask, name)(*args, **kwargs)
                return MaskedTensor._from_values(data, mask)

            return structural
        if name in _ELEMENTWISE:

            def elementwise(*args, **kwargs):
                args = tuple(_data_of(a, self) for a in args)
                data = getattr(self._masked_data, name)(*args, **kwargs)
                return MaskedTensor._from_values(data, self._masked_mask)

            return elementwise
        raise AttributeError(f"'MaskedTensor' object has no attribute '{name}'")

    def __repr__(self) -> str:
        if self.dim() == 0:
            value = self._masked_data.item()
            text = _format(value) if bool(self._masked_mask.item()) else "--"
            return f"MaskedTensor({text}, {bool(self._masked_mask.item())})"
        body = _masked_str(self._masked_data, self._masked_mask)
        return "MaskedTensor(\n" + "\n".join("  " + line for line in body.split("\n")) + "\n)"


def _format(value) -> str:
    return f"{value:8.4f}" if isinstance(value, float) else str(value)


def _masked_str(data, mask) -> str:
    """torch's layout: 1-D rows of 8-wide numbers, ``--`` for masked-out ones, nested
    brackets indented two spaces a level."""
    if data.dim() == 1:
        elements = [_format(v) for v in data.tolist()]
        kept = mask.tolist()
        width = max((8 if not k else len(e) for e, k in zip(elements, kept)), default=0)
        return "[" + ", ".join(e if k else "--".rjust(width) for e, k in zip(elements, kept)) + "]"
    rows = [_masked_str(d, m) for d, m in zip(data, mask)]
    rows = ["\n".join("  " + line for line in row.split("\n")) for row in rows]
    return "[\n" + ",\n".join(rows) + "\n]"


def _data_of(value, like: MaskedTensor):
    """``value``'s data for an op with ``like``; MaskedTensors must share its mask."""
    if not is_masked_tensor(value):
        return value
    mask, other = like.get_mask(), value.get_mask()
    if tuple(mask.shape) != tuple(other.shape) or not bool((mask == other).all()):
        raise ValueError(
            "Input masks must match. If you need support for this, please open an issue on Github."
        )
    return value.get_data()


def _binary(name: str, reflected: bool = False):
    def op(self, other):
        other_data = _data_of(other, self)
        left, right = (other_data, self._masked_data) if reflected else (self._masked_data,
                                                                           other_data)  # fmt: skip
        data = getattr(Tensor, name)(left, right) if isinstance(left, Tensor) else (
            getattr(Tensor, name.replace("__", "__r", 1))(right, left))  # fmt: skip
        return MaskedTensor._from_values(data, self._masked_mask)

    return op


for _name in "add sub mul truediv floordiv pow lt le gt ge eq ne and or".split():
    setattr(MaskedTensor, f"__{_name}__", _binary(f"__{_name}__"))
for _name in "add sub mul truediv pow".split():
    setattr(MaskedTensor, f"__r{_name}__", _binary(f"__{_name}__", reflected=True))
MaskedTensor.__neg__ = lambda self: MaskedTensor._from_values(-self._masked_data, self._masked_mask)
MaskedTensor.__abs__ = lambda self: self.abs()
MaskedTensor.__invert__ = lambda self: MaskedTensor._from_values(
    ~self._masked_data, self._masked_mask
)


# ember.masked's functions by name, registered by _ops when it loads (it imports this module)
_FUNCTIONS: dict = {}


def _reduce(name: str, mt: MaskedTensor, *args, **kwargs) -> MaskedTensor:
    """``mt.<reduction>(...)``: the masked reduction of the data, masked where a reduced slice
    kept no element."""
    function = _FUNCTIONS[name]
    if "mask" in kwargs:
        raise TypeError(f"MaskedTensor.{name}() takes its mask from the tensor, not mask=")
    data, mask = mt.get_data(), mt.get_mask()
    result = function(data, *args, mask=mask, **kwargs)
    kept = _FUNCTIONS["_output_mask"](function, data, *args, mask=mask, **kwargs)
    if tuple(kept.shape) != tuple(result.shape):  # argmax/argmin over all dims
        kept = kept.any().reshape(result.shape)
    return MaskedTensor._from_values(result, kept)


def masked_tensor(data, mask, requires_grad: bool = False) -> MaskedTensor:
    """A MaskedTensor of ``data`` (copied: gradients stop here) and the bool ``mask``.

    Example::
        >>> masked_tensor(ember.tensor([1.0, 2.0]), ember.tensor([True, False]))
        MaskedTensor(
          [  1.0000,       --]
        )
    """
    if isinstance(data, Tensor) and data.requires_grad:
        warnings.warn(
            "It is not recommended to create a MaskedTensor with a tensor that requires_grad. "
            "To avoid this, you can use data.detach().clone()",
            UserWarning,
            stacklevel=2,
        )
    if isinstance(data, Tensor):
        data = data.detach().clone()
    if isinstance(mask, Tensor):
        mask = mask.clone()
    return MaskedTensor(data, mask, requires_grad)


def as_masked_tensor(data, mask) -> MaskedTensor:
    """A MaskedTensor over ``data`` itself: gradients flow back to ``data``."""
    return MaskedTensor._from_values(data, mask)
