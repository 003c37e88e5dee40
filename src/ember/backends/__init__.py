"""``ember.backends``: PyTorch's backend switches, answered for ember's engines.

ember computes with NumPy/OpenBLAS on the CPU and CuPy on CUDA. Flags that tune kernels
ember does not have (cuDNN autotuning, TF32, oneDNN) are kept as settable attributes, so
programs that set them run unchanged; the ``is_available()`` queries tell the truth.
"""

from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
