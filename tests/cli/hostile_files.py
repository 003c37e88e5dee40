"""Files ``ember inspect`` and ``ember diff`` must handle or refuse in one line, and a way to
run the command with its memory capped, so that a regression that materialises a huge record
fails at once instead of swapping."""

import resource
import subprocess
import zipfile

import ember

from .helpers import ember_command, ember_env

MEMORY_CAP = 2 * 2**30  # address space of the child: ample for Python, NumPy and ember


def run_capped(*args) -> subprocess.CompletedProcess:
    """``ember ARGS`` in a child process whose address space is capped at ``MEMORY_CAP``."""

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    return subprocess.run(
        ember_command(*args),
        capture_output=True,
        text=True,
        env=ember_env(),
        preexec_fn=cap,
        timeout=300,
    )


def replace_pickle(path, data: bytes) -> None:
    """Give the ``.pt`` zip at ``path`` the pickle ``data`` (its records stay)."""
    with zipfile.ZipFile(path) as archive:
        members = [(info, archive.read(info.filename)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w") as archive:
        for info, content in members:
            archive.writestr(info, data if info.filename.endswith("data.pkl") else content)


def saved_on_gpu(path, tensors: dict) -> None:
    """A checkpoint of ``tensors`` whose storages say they were saved on ``cuda:0``, as a
    ``torch.save`` on a GPU writes them."""
    ember.save(tensors, path)
    with zipfile.ZipFile(path) as archive:
        data = archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))
    cpu, cuda = b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"  # BINUNICODE strings
    assert data.count(cpu) == len(tensors)
    replace_pickle(path, data.replace(cpu, cuda))


def nested_lists(path, depth: int) -> None:
    """A ``.pt`` whose pickle is ``depth`` lists, each inside the one before."""
    ember.save({"w": ember.ones(1)}, path)
    replace_pickle(path, b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b".")


def self_containing(path, kind: str) -> None:
    """A ``.pt`` whose pickle is a list or dict that contains itself."""
    ember.save({"w": ember.ones(1)}, path)
    if kind == "list":  # l = []; l.append(l)
        data = b"\x80\x02]q\x00h\x00a."
    else:  # d = {}; d["k"] = d
        data = b"\x80\x02}q\x00X\x01\x00\x00\x00kq\x01h\x00s."
    replace_pickle(path, data)


def onnx_with(path, initializer) -> None:
    """An ONNX model whose one node returns ``initializer`` (a TensorProto)."""
    from onnx import helper

    output = helper.make_tensor_value_info("y", initializer.data_type, None)
    node = helper.make_node("Identity", [initializer.name], ["y"])
    graph = helper.make_graph([node], "g", [], [output], [initializer])
    path.write_bytes(helper.make_model(graph).SerializeToString())
