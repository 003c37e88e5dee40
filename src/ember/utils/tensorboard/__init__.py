"""``ember.utils.tensorboard``: PyTorch's ``SummaryWriter``, logging to TensorBoard.

Event files are written with the ``tensorboard`` package (``pip install ember[tensorboard]``),
so TensorBoard, and its ``EventAccumulator``, read them as they read PyTorch's. This package is
imported only when a program imports it (``from ember.utils.tensorboard import SummaryWriter``),
never by ``import ember``.

Example::
    >>> from ember.utils.tensorboard import SummaryWriter
    >>> writer = SummaryWriter()          # runs/<date>_<time>_<host>
    >>> writer.add_scalar("loss", 0.25, global_step=10)
    >>> writer.close()
"""

try:
    import tensorboard
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "ember.utils.tensorboard needs the tensorboard package: pip install 'ember[tensorboard]' "
        "(or pip install tensorboard)"
    ) from exc

_version = tuple(int(p) for p in tensorboard.__version__.split(".")[:2] if p.isdigit())
if _version < (1, 15):
    raise ImportError(
        f"TensorBoard logging requires TensorBoard version 1.15 or above; "
        f"{tensorboard.__version__} is installed"
    )
del _version, tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter

from .writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
