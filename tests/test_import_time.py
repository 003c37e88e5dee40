"""What ``import ember`` leaves unloaded (issue 32: ``import ember`` within 0.2 s): the namespaces
and families a plain ``ember.tensor(...)`` program does not need load on first use, and behave
as if they had been there all along. Each check runs in a fresh interpreter; none is timed."""

import subprocess
import sys

import pytest

# loaded on first use; `import ember` loaded each of them until issue 32
LAZY_MODULES = (
    "ember.accelerator",
    "ember.amp",
    "ember.backends",
    "ember.cuda",
    "ember.fft",
    "ember.linalg",
    "ember.sparse",
    "ember.version",
    "ember._memory_scope",
    "ember._random_ops",
    "ember._random.counts",
    "numpy.random",  # the default generator makes its bit generator on first draw
    "ember.ops.loss_enum",
    "ember.ops.linalg_lowrank",
    "ember.ops.search",
    # optional packages (tests/test_install_and_imports.py checks the namespaces too)
    "scipy",
    "numba",
    "matplotlib",
    "onnx",
    "onnxruntime",
    "cupy",
    "ml_dtypes",
    # standard modules ember needs only for some work
    "ctypes.util",
    "subprocess",
    "tempfile",
    "traceback",
)


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_ember_loads_none_of_the_lazy_modules():
    loaded = _run(f"import sys, ember\nprint(sorted(set({LAZY_MODULES!r}) & set(sys.modules)))")
    assert loaded == "[]"


def test_a_plain_program_runs_without_the_lazy_modules():
    code = (
        "import sys, ember\n"
        "x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
        "(x * x).sum().backward()\n"
        "assert x.grad.tolist() == [2.0, 4.0, 6.0]\n"
        f"print(sorted(set({LAZY_MODULES!r}) & set(sys.modules)))"
    )
    assert _run(code) == "[]"


@pytest.mark.parametrize(
    "expression, value",
    [
        ("ember.cuda.is_available()", "False"),
        ("ember.fft.fft(ember.tensor([1.0, 2.0])).tolist()", "[(3+0j), (-1+0j)]"),
        ("ember.tensor([0.0, 2.0]).to_sparse()._nnz()", "1"),
        ("ember.Tensor.to_sparse.__name__", "_to_sparse"),
        ("ember.sparse_coo_tensor([[0]], [1.0], (2,)).to_dense().tolist()", "[1.0, 0.0]"),
        ("ember.tensor([1.0]).is_sparse_csr", "False"),
        ("ember.Tensor.stft is ember.stft", "True"),
        ("ember.det(ember.eye(2)).item()", "1.0"),
        ("ember.linalg.inv(ember.eye(2)).tolist()", "[[1.0, 0.0], [0.0, 1.0]]"),
        ("ember.autocast is ember.amp.autocast", "True"),
        ("ember.is_autocast_enabled()", "False"),
        ("str(ember.__version__)", "0.1.0"),
        ("type(ember.memory_scope).__name__", "type"),
    ],
)
def test_a_lazy_name_works_on_first_use(expression, value):
    assert _run(f"import ember\nprint({expression})") == value


def test_loading_the_lazy_families_changes_neither_dir_nor_the_tensor_attributes():
    code = (
        "import ember\n"
        "public = lambda: {n for n in dir(ember) if not n.startswith('_')}\n"
        "root, tensor = public(), set(dir(ember.Tensor))\n"
        "import ember.sparse, ember.fft._stft, ember.linalg, ember.amp, ember.cuda\n"
        "import ember.ops.loss_enum, ember.ops.search, ember.ops.linalg_lowrank\n"
        "print(sorted(set(dir(ember.Tensor)) ^ tensor), sorted(public() ^ root))"
    )
    assert _run(code) == "[] []"


def test_star_import_gives_the_names_that_load_on_first_use():
    wanted = {"sparse", "fft", "cuda", "linalg", "amp", "version", "autocast", "stft", "spmm"}
    wanted |= {"memory_scope", "sparse_coo_tensor", "kl_div", "searchsorted", "tensor"}
    code = f"ns = {{}}\nexec('from ember import *', ns)\nprint(sorted({wanted!r} - set(ns)))"
    assert _run(code) == "[]"


def test_fork_rng_still_reaches_cuda_when_ember_cuda_was_never_named():
    code = (
        "import sys, ember\n"
        "cuda = ember.random.DEVICE_RANDOM['cuda']\n"
        "assert 'ember.cuda' not in sys.modules\n"
        "cuda.is_available()\n"
        "print(ember.random.DEVICE_RANDOM['cuda'] is sys.modules['ember.cuda'])"
    )
    assert _run(code) == "True"
