import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ember
from ember.serialization import SerializationError


def test_state_dict_round_trip(tmp_path):
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    path = tmp_path / "model.safetensors"
    ember.save(model.state_dict(), path)
    loaded = ember.load(path)
    assert list(loaded) == list(model.state_dict())
    other = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    other.load_state_dict(loaded)
    x = ember.randn(5, 3)
    np.testing.assert_array_equal(other(x).detach().numpy(), model(x).detach().numpy())


@pytest.mark.parametrize(
    "dtype",
    [
        "float16",
        "float32",
        "float64",
        "bfloat16",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "bool",
    ],
)
def test_every_dtype_round_trips(tmp_path, dtype):
    t = ember.tensor([[0, 1, 2], [3, 4, 5]]).to(
        getattr(ember, dtype if dtype != "bool" else "bool")
    )
    ember.save({"t": t, "scalar": ember.tensor(2.5)}, tmp_path / "x.safetensors")
    out = ember.load(tmp_path / "x.safetensors")
    assert out["t"].dtype == t.dtype and out["t"].tolist() == t.tolist()
    assert out["scalar"].shape == ()


def test_nested_structures_keep_their_types(tmp_path):
    obj = {
        "state": {0: {"step": ember.tensor(3.0), "buf": ember.ones(2)}},
        "groups": [{"lr": 0.1, "betas": (0.9, 0.99), "params": [0, 1], "name": None}],
    }
    ember.save(obj, tmp_path / "o.safetensors")
    out = ember.load(tmp_path / "o.safetensors")
    assert list(out["state"]) == [0]
    assert out["groups"][0]["betas"] == (0.9, 0.99) and out["groups"][0]["name"] is None
    assert out["state"][0]["buf"].tolist() == [1.0, 1.0]


def test_optimizer_state_survives_a_checkpoint(tmp_path):
    model = ember.nn.Linear(2, 1)
    opt = ember.optim.Adam(model.parameters(), lr=0.1)
    model(ember.ones(3, 2)).sum().backward()
    opt.step()
    ember.save(opt.state_dict(), tmp_path / "opt.safetensors")
    fresh = ember.optim.Adam(model.parameters(), lr=0.5)
    fresh.load_state_dict(ember.load(tmp_path / "opt.safetensors"))
    assert fresh.param_groups[0]["lr"] == 0.1
    assert fresh.state[model.weight]["step"].item() == 1


def test_file_is_readable_as_plain_safetensors(tmp_path):
    ember.save({"w": ember.arange(6.0).reshape(2, 3)}, tmp_path / "w.safetensors")
    raw = (tmp_path / "w.safetensors").read_bytes()
    n = int.from_bytes(raw[:8], "little")
    import json

    header = json.loads(raw[8 : 8 + n])
    assert header["w"] == {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}
    assert np.frombuffer(raw[8 + n :], dtype="<f4").tolist() == [0, 1, 2, 3, 4, 5]
    assert ember.serialization.load_file(tmp_path / "w.safetensors")["w"].shape == (2, 3)


def test_truncated_and_malformed_files_are_refused(tmp_path):
    path = tmp_path / "t.safetensors"
    ember.save({"w": ember.ones(100)}, path)
    raw = path.read_bytes()
    (tmp_path / "short").write_bytes(raw[:-10])
    with pytest.raises(SerializationError, match="truncated"):
        ember.load(tmp_path / "short")
    (tmp_path / "tiny").write_bytes(b"abc")
    with pytest.raises(SerializationError, match="fewer than the 8-byte header"):
        ember.load(tmp_path / "tiny")
    bad = (8).to_bytes(8, "little") + b"not json"
    (tmp_path / "json").write_bytes(bad)
    with pytest.raises(SerializationError, match="not JSON"):
        ember.load(tmp_path / "json")
    header = b'{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}'
    (tmp_path / "size").write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 8)
    with pytest.raises(SerializationError, match="expected 12 for shape"):
        ember.load(tmp_path / "size")
    header = b'{"w":{"dtype":"Q99","shape":[1],"data_offsets":[0,4]}}'
    (tmp_path / "dtype").write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 4)
    with pytest.raises(SerializationError, match="unsupported dtype"):
        ember.load(tmp_path / "dtype")
    huge = (10**12).to_bytes(8, "little")
    (tmp_path / "huge").write_bytes(huge + b"{}")
    with pytest.raises(SerializationError, match="header claims"):
        ember.load(tmp_path / "huge")


def test_safetensors_save_refuses_objects_it_would_have_to_pickle(tmp_path):
    with pytest.raises(TypeError, match="never pickle"):
        ember.save({"f": object()}, tmp_path / "x.safetensors")


def test_kill_during_save_leaves_previous_checkpoint_intact(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    ember.save({"w": ember.zeros(3)}, path)
    child = textwrap.dedent(f"""
        import os, sys, time
        import ember
        def stuck(fd):
            print("writing", flush=True)
            time.sleep(60)
        os.fsync = stuck  # the new file is written but not yet renamed: kill now
        ember.save({{"w": ember.ones(1_000_000)}}, {str(path)!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert ember.load(path)["w"].tolist() == [0.0, 0.0, 0.0]
    leftovers = [p for p in os.listdir(tmp_path) if p.startswith(".ember-")]
    assert len(leftovers) == 1  # the half-written temporary file, never the checkpoint
    ember.save({"w": ember.ones(2)}, path)
    assert ember.load(path)["w"].tolist() == [1.0, 1.0]


def test_pytorch_checkpoint_loads_into_ember_model(tmp_path, torch_mod):
    torch = torch_mod
    net_t = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    torch.save(net_t.state_dict(), tmp_path / "net.pt")
    torch.save(
        {"model": net_t.state_dict(), "epoch": 3, "t": torch.arange(6).reshape(2, 3)[:, 1]},
        tmp_path / "ckpt.pth",
    )
    net_e = ember.nn.Sequential(ember.nn.Linear(4, 5), ember.nn.Tanh(), ember.nn.Linear(5, 2))
    net_e.load_state_dict(ember.load(tmp_path / "net.pt"))
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    for (ke, ve), (kt, vt) in zip(net_e.state_dict().items(), net_t.state_dict().items()):
        assert ke == kt
        np.testing.assert_array_equal(ve.numpy(), vt.numpy())  # bit for bit
    # outputs agree to float32 rounding (BLAS and tanh kernels differ in the last bit)
    np.testing.assert_allclose(
        net_e(ember.tensor(x)).detach().numpy(),
        net_t(torch.tensor(x)).detach().numpy(),
        rtol=1e-6,
        atol=1e-7,
    )
    ckpt = ember.load(tmp_path / "ckpt.pth")
    assert ckpt["epoch"] == 3 and ckpt["t"].tolist() == [1, 4]


def test_pytorch_checkpoint_with_code_is_refused(tmp_path, torch_mod):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    torch_mod.save({"x": Evil()}, tmp_path / "evil.pt")
    with pytest.raises(
        pickle.UnpicklingError, match="GLOBAL posix.system whose module posix is blocked"
    ):
        ember.load(tmp_path / "evil.pt")
    _ = time


def test_saved_files_honour_the_umask_and_keep_an_existing_mode(tmp_path):
    old = os.umask(0o022)
    try:
        for name in ("w.safetensors", "w.pt"):
            path = tmp_path / name
            ember.save({"w": ember.ones(2)}, path)
            assert path.stat().st_mode & 0o777 == 0o644
            path.chmod(0o600)
            ember.save({"w": ember.zeros(2)}, path)
            assert path.stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


def test_saving_to_a_symlink_writes_through_it(tmp_path):
    target = tmp_path / "real.pt"
    link = tmp_path / "link.pt"
    ember.save({"w": ember.zeros(2)}, target)
    link.symlink_to(target)
    ember.save({"w": ember.ones(2)}, link)
    assert link.is_symlink()
    assert ember.load(target)["w"].tolist() == [1.0, 1.0]


def test_stale_temporaries_of_killed_saves_are_removed_by_the_next_save(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no longer runs
    stale = tmp_path / f".ember-{dead.pid}-abc.tmp"
    stale.write_bytes(b"half a checkpoint")
    alive = tmp_path / f".ember-{os.getpid() + 0}-mine.tmp"  # this process: a running save
    alive.write_bytes(b"in progress")
    foreign = tmp_path / ".ember-notapid.tmp"
    foreign.write_bytes(b"not ours to judge")
    ember.save({"w": ember.ones(2)}, tmp_path / "w.safetensors")
    assert not stale.exists()
    assert alive.exists() and foreign.exists()


def test_a_failed_save_names_the_target_not_the_temporary(tmp_path):
    target = tmp_path / "w.pt"
    target.mkdir()  # a folder where the file should go: the final rename fails
    (target / "inside").write_text("x")
    with pytest.raises(OSError, match=f"ember.save: cannot write {target}"):
        ember.save({"w": ember.ones(2)}, target)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
