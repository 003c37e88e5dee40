"""File fuzzing: random mutations of valid safetensors and PyTorch checkpoints either load or
raise SerializationError (pickle.UnpicklingError, its base, for torch's weights-only refusal).

Every case runs in one child process whose address space is capped (``resource.setrlimit``),
so a mutation that made the loader allocate gigabytes fails the test instead of the machine.
Seeds are fixed: a failure names its case, and ``_mutations(kind, seed)`` rebuilds it.
"""

from __future__ import annotations

import functools
import io
import json
import os
import random
import subprocess
import sys
import zipfile

import pytest

# 150 per family by default; EMBER_FUZZ_CASES=2000 for a longer run (seeds 0..N-1)
CASES_PER_FAMILY = int(os.environ.get("EMBER_FUZZ_CASES", "150"))
MEMORY_CAP = 3 << 30  # bytes of address space for the child (the valid files need < 1 MB)

_CHILD = r"""
import json, pickle, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
import io
import ember
from ember.serialization import SerializationError
sys.setrecursionlimit(1000)
outcomes = []
for name, blob in ((c["name"], bytes.fromhex(c["blob"])) for c in json.load(sys.stdin)):
    try:
        ember.load(io.BytesIO(blob))
        outcomes.append([name, "loaded", ""])
    except pickle.UnpicklingError as exc:  # SerializationError and the weights-only refusal
        outcomes.append([name, "refused", type(exc).__name__])
    except BaseException as exc:
        outcomes.append([name, "ESCAPED", f"{type(exc).__name__}: {str(exc)[:200]}"])
json.dump(outcomes, sys.stdout)
"""


@functools.lru_cache(maxsize=1)
def _valid_files() -> dict:
    import ember
    from ember.serialization import _safetensors

    ember.manual_seed(0)
    state = {
        "weight": ember.randn(4, 3),
        "bias": ember.zeros(3, dtype=ember.float64),
        "steps": ember.tensor([1, 2, 3]),
        "mask": ember.tensor([True, False]),
        "half": ember.ones(2, 2, dtype=ember.float16),
        "nested": {"lr": 0.1, "betas": (0.9, 0.999), "names": ["a", "b"]},
    }
    safetensors = io.BytesIO()
    _safetensors.save(state, safetensors)
    base = ember.arange(12.0)
    checkpoint = dict(state)
    checkpoint["view"] = base[2:8].reshape(2, 3)  # shares base's storage
    checkpoint["base"] = base
    checkpoint["param"] = ember.nn.Parameter(ember.ones(2))
    checkpoint["expanded"] = ember.ones(1).expand(3, 4)
    pt = io.BytesIO()
    ember.save(checkpoint, pt)
    legacy = io.BytesIO()
    ember.save(checkpoint, legacy, _use_new_zipfile_serialization=False)
    return {"safetensors": safetensors.getvalue(), "pt": pt.getvalue(), "legacy": legacy.getvalue()}


def _mutate(blob: bytes, rng: random.Random) -> bytes:
    data = bytearray(blob)
    for _ in range(rng.randint(1, 4)):
        if not data:  # truncated to nothing: nothing left to mutate
            break
        how = rng.randrange(6)
        at = rng.randrange(len(data))
        if how == 0:  # flip bits of one byte
            data[at] ^= 1 << rng.randrange(8)
        elif how == 1:  # a random byte
            data[at] = rng.randrange(256)
        elif how == 2:  # an interesting byte (0, 0xff, 0x7f, 0x80, a digit, a bracket)
            data[at] = rng.choice([0, 0xFF, 0x7F, 0x80, 0x39, 0x5B, 0x7B])
        elif how == 3:  # truncate
            del data[at:]
        elif how == 4:  # insert random bytes
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        else:  # duplicate a chunk
            end = min(len(data), at + rng.randint(1, 64))
            data[at:at] = data[at:end]
    return bytes(data)


def _with_member(blob: bytes, name: str, payload: bytes) -> bytes:
    """``blob``, a valid zip, with member ``name`` replaced: the zip stays valid."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(blob)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = payload if info.filename == name else src.read(info.filename)
            dst.writestr(info.filename, data, compress_type=zipfile.ZIP_STORED)
    return out.getvalue()


def _mutations(kind: str, seed: int) -> bytes:
    files = _valid_files()
    rng = random.Random(f"{kind}-{seed}")
    if kind == "safetensors-bytes":
        return _mutate(files["safetensors"], rng)
    if kind == "safetensors-header":  # mutate only inside the JSON header, keep its length
        blob = files["safetensors"]
        n = int.from_bytes(blob[:8], "little")
        header = _mutate(blob[8 : 8 + n], rng)
        return len(header).to_bytes(8, "little") + header + blob[8 + n :]
    if kind == "pt-bytes":
        return _mutate(files["pt"], rng)
    if kind == "legacy-bytes":  # torch's pre-zip format: pickles and raw storages in a row
        return _mutate(files["legacy"], rng)
    if kind == "pt-pickle":  # a valid zip around a mutated data.pkl
        blob = files["pt"]
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            pickled = archive.read("archive/data.pkl")
        return _with_member(blob, "archive/data.pkl", _mutate(pickled, rng))
    raise ValueError(kind)


FAMILIES = ["safetensors-bytes", "safetensors-header", "pt-bytes", "pt-pickle", "legacy-bytes"]


def _run_cases(cases: list) -> list:
    payload = json.dumps([{"name": n, "blob": b.hex()} for n, b in cases])
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(MEMORY_CAP)],
        input=payload,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, f"the fuzz child died ({done.returncode}): {done.stderr[-2000:]}"
    return json.loads(done.stdout)


@pytest.mark.parametrize("family", FAMILIES)
def test_mutated_files_load_or_raise_serialization_error(family):
    cases = [(f"{family}:{seed}", _mutations(family, seed)) for seed in range(CASES_PER_FAMILY)]
    outcomes = _run_cases(cases)
    assert len(outcomes) == len(cases)
    escaped = [o for o in outcomes if o[1] == "ESCAPED"]
    assert not escaped, escaped[:10]
    # the mutations must reach past the first check: some cases load, most are refused
    assert any(o[1] == "refused" for o in outcomes)


def test_the_unmutated_files_load():
    outcomes = _run_cases(sorted(_valid_files().items()))
    assert [o[1] for o in outcomes] == ["loaded", "loaded", "loaded"]
