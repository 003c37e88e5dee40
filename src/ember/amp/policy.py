"""The autocast policy: one table saying, per op and device, which dtype its inputs are cast to.

Categories (PyTorch's cast policies, ``aten/src/ATen/autocast_mode.cpp``):

- ``LOWER``     floating inputs go to the region's lower precision (float16 / bfloat16)
- ``FP32``      floating inputs go to float32
- ``FP32_OPT``  float32 unless the call passes ``dtype=`` (and only when the first input is
                eligible): the reductions and softmaxes on CUDA
- ``PROMOTE``   all floating inputs go to the widest floating type among them
- ``BANNED``    raise: the op is unsafe to autocast (binary_cross_entropy on CUDA)
- ``KEEP``      run as called, and nothing inside it is cast: PyTorch has a kernel of its own
                for the op, while ember's Python composes it from listed ops
- ``None``      the op runs as called

Eligible inputs are floating tensors on the region's device other than float64. Each row
names the op and where to find it (``module:function``, several when the same op has separate
Python functions there); a name that does not exist yet is skipped, so the table may run ahead
of the ops. The table is read when autocast is entered, never while it is off.
"""

from __future__ import annotations

LOWER, FP32, FP32_OPT, PROMOTE, BANNED, KEEP = (
    "lower",
    "fp32",
    "fp32_opt",
    "promote",
    "banned",
    "keep",
)

_E, _F, _L = "ember", "ember.nn.functional", "ember.linalg"
_RNN = "ember.nn.modules.rnn_cells"

# (where the op lives, CUDA policy, CPU policy)
POLICY: tuple = (
    # --- matrix products and convolutions: lower precision on both devices ---
    (f"{_E}:matmul", LOWER, LOWER),
    (f"{_E}:mm", LOWER, LOWER),
    (f"{_E}:bmm", LOWER, LOWER),
    (f"{_E}:baddbmm", LOWER, LOWER),
    (f"{_E}:addmm", LOWER, LOWER),
    (f"{_E}:addbmm", LOWER, LOWER),
    (f"{_E}:mv", LOWER, KEEP),
    (f"{_E}:addmv", LOWER, KEEP),
    (f"{_E}:addr", LOWER, KEEP),
    (f"{_E}:outer {_E}:ger", KEEP, KEEP),
    # einsum, tensordot, multi_dot and the RNN cells reach bmm/mm inside PyTorch's CPU kernels
    (f"{_E}:einsum", LOWER, LOWER),
    (f"{_E}:chain_matmul", LOWER, LOWER),
    (f"{_L}:multi_dot", LOWER, LOWER),
    (f"{_L}:vecdot", LOWER, LOWER),
    (f"{_F}:linear", LOWER, LOWER),
    (f"{_F}:conv1d", LOWER, LOWER),
    (f"{_F}:conv2d", LOWER, LOWER),
    (f"{_F}:conv3d", LOWER, LOWER),
    (f"{_F}:conv_transpose1d", LOWER, LOWER),
    (f"{_F}:conv_transpose2d", LOWER, LOWER),
    (f"{_F}:conv_transpose3d", LOWER, LOWER),
    (f"{_F}:prelu", LOWER, LOWER),
    (f"{_F}:scaled_dot_product_attention", LOWER, LOWER),
    (f"{_E}:lstm_cell {_RNN}:lstm_cell", LOWER, KEEP),
    (f"{_E}:gru_cell {_RNN}:gru_cell", LOWER, KEEP),
    (f"{_E}:rnn_tanh_cell {_RNN}:rnn_tanh_cell", LOWER, LOWER),
    (f"{_E}:rnn_relu_cell {_RNN}:rnn_relu_cell", LOWER, LOWER),
    # --- float32 on CUDA: functions whose range or accuracy half precision cannot hold ---
    (f"{_E}:acos {_E}:arccos", FP32, None),
    (f"{_E}:asin {_E}:arcsin", FP32, None),
    (f"{_E}:cosh", FP32, None),
    (f"{_E}:erfinv", FP32, None),
    (f"{_E}:exp", FP32, None),
    (f"{_E}:expm1", FP32, None),
    (f"{_E}:log", FP32, None),
    (f"{_E}:log10", FP32, None),
    (f"{_E}:log2", FP32, None),
    (f"{_E}:log1p", FP32, None),
    (f"{_E}:reciprocal", FP32, None),
    (f"{_E}:rsqrt", FP32, None),
    (f"{_E}:sinh", FP32, None),
    (f"{_E}:tan", FP32, None),
    (f"{_E}:pow", FP32, None),
    (f"{_F}:softplus", FP32, None),
    (f"{_F}:layer_norm", FP32, None),
    (f"{_E}:native_layer_norm", FP32, None),
    (f"{_F}:group_norm", FP32, None),
    (f"{_F}:rms_norm", FP32, None),
    (f"{_F}:cosine_similarity", FP32, None),
    (f"{_E}:dist", FP32, None),
    (f"{_F}:pdist", FP32, None),
    (f"{_E}:cdist", FP32, FP32),
    (f"{_E}:renorm", FP32, None),
    (f"{_E}:logsumexp", FP32, None),
    (f"{_F}:interpolate", FP32, None),  # PyTorch's upsample_* kernels
    # --- losses: float32 on both devices ---
    (f"{_F}:nll_loss ember.ops.loss:nll_loss", FP32, FP32),
    (f"{_F}:cross_entropy", FP32, FP32),  # CUDA: its parts (log_softmax, nll_loss) are fp32
    (f"{_F}:poisson_nll_loss", FP32, FP32),
    (f"{_F}:cosine_embedding_loss", FP32, FP32),
    (f"{_F}:hinge_embedding_loss", FP32, FP32),
    (f"{_F}:kl_div", FP32, FP32),
    (f"{_F}:l1_loss", FP32, FP32),
    (f"{_F}:smooth_l1_loss", FP32, FP32),
    (f"{_F}:huber_loss", FP32, FP32),
    (f"{_F}:mse_loss", FP32, FP32),
    (f"{_F}:margin_ranking_loss", FP32, FP32),
    (f"{_F}:multilabel_margin_loss", FP32, FP32),
    (f"{_F}:soft_margin_loss", FP32, FP32),
    (f"{_F}:triplet_margin_loss", FP32, FP32),
    (f"{_F}:multi_margin_loss", FP32, FP32),
    (f"{_F}:ctc_loss", None, FP32),
    (f"{_F}:binary_cross_entropy_with_logits", FP32, FP32),
    (f"{_F}:binary_cross_entropy", BANNED, FP32),
    # --- reductions and softmaxes: float32 on CUDA unless the call asks for a dtype ---
    (f"{_E}:prod", FP32_OPT, FP32),
    (f"{_E}:sum", FP32_OPT, None),
    (f"{_E}:cumsum", FP32_OPT, None),
    (f"{_E}:cumprod", FP32_OPT, None),
    (f"{_E}:softmax", FP32_OPT, None),
    (f"{_E}:log_softmax", FP32_OPT, None),
    (f"{_L}:vector_norm", FP32_OPT, None),
    (f"{_L}:matrix_norm", FP32_OPT, None),
    (f"{_E}:norm", FP32, None),  # PyTorch appends dtype=float32 to norm
    (f"{_E}:nansum", KEEP, None),  # ember's sum inside, PyTorch's own kernel
    (f"{_E}:nanmean", KEEP, None),
    (f"{_F}:avg_pool1d", KEEP, None),
    # --- float32 on the CPU: linear algebra, spectral ops, 3-D pools, padding ---
    (f"{_E}:inverse {_L}:inv {_L}:inv_ex", None, FP32),
    (f"{_E}:pinverse {_L}:pinv", None, FP32),
    (f"{_E}:cholesky {_L}:cholesky {_L}:cholesky_ex", None, FP32),
    (f"{_E}:trace", None, FP32),
    (f"{_E}:quantile", None, FP32),
    (f"{_E}:nanquantile", None, FP32),
    (f"{_E}:stft", None, FP32),
    (f"{_E}:polar", None, FP32),
    (f"{_L}:solve", None, FP32),
    (f"{_L}:svdvals", None, FP32),
    (f"{_L}:svd", None, FP32),
    (f"{_L}:qr", None, FP32),
    (f"{_L}:eig", None, FP32),
    (f"{_L}:eigh", None, FP32),
    (f"{_L}:eigvals", None, FP32),
    (f"{_L}:eigvalsh", None, FP32),
    (f"{_L}:lstsq", None, FP32),
    (f"{_L}:cond", None, FP32),
    (f"{_L}:matrix_rank", None, FP32),
    (f"{_L}:householder_product", None, FP32),
    (f"{_L}:tensorinv", None, FP32),
    (f"{_L}:tensorsolve", None, FP32),
    (f"{_F}:grid_sample", PROMOTE, FP32),
    (f"{_F}:avg_pool3d", None, FP32),
    (f"{_F}:max_pool3d", None, FP32),
    (f"{_F}:adaptive_avg_pool3d", None, FP32),
    (f"{_F}:adaptive_max_pool3d", None, FP32),
    (f"{_F}:fractional_max_pool2d", None, FP32),
    (f"{_F}:fractional_max_pool3d", None, FP32),
    (f"{_F}:max_unpool2d", None, FP32),
    (f"{_F}:max_unpool3d", None, FP32),
    (
        "ember.fft:fft ember.fft:ifft ember.fft:fft2 ember.fft:ifft2 ember.fft:fftn "
        "ember.fft:ifftn ember.fft:rfft ember.fft:irfft ember.fft:rfft2 ember.fft:irfft2 "
        "ember.fft:rfftn ember.fft:irfftn ember.fft:hfft ember.fft:ihfft",
        None,
        FP32,
    ),
    # --- the widest input type ---
    (f"{_E}:addcdiv", PROMOTE, None),
    (f"{_E}:addcmul", PROMOTE, None),
    (f"{_E}:atan2 {_E}:arctan2", PROMOTE, None),
    (f"{_F}:bilinear", PROMOTE, KEEP),
    (f"{_E}:cross {_L}:cross", PROMOTE, None),
    (f"{_E}:dot {_E}:inner", PROMOTE, KEEP),
    (f"{_E}:vdot", PROMOTE, KEEP),
    (f"{_E}:index_put", PROMOTE, None),
    (f"{_E}:tensordot", PROMOTE, LOWER),
    (f"{_E}:scatter_add", PROMOTE, None),
    (f"{_E}:cat {_E}:concat {_E}:concatenate", None, PROMOTE),
    (f"{_E}:stack", None, PROMOTE),
    (f"{_E}:index_copy", None, PROMOTE),
)

DEVICES = ("cuda", "cpu")  # the column order of POLICY
CATEGORIES = (LOWER, FP32, FP32_OPT, PROMOTE, BANNED, KEEP)
