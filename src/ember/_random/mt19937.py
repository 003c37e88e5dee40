"""PyTorch's CPU random engine: a 32-bit Mersenne Twister seeded with ``init_genrand``.

The raw words come from NumPy's ``MT19937`` bit generator (C speed, 624-word blocks), or for
long fills from a compiled loop over the same state (:mod:`ember._kernels.random_jit`, twice
as fast); only the seeding and the state layout are PyTorch's. ``manual_seed(s)`` keeps the
full 64-bit ``s`` as the initial seed but seeds the twister with its low 32 bits, as torch
does.
"""

from __future__ import annotations

import numpy as np

from .._kernels import jit

STATE_WORDS = 624
_LOW_32 = 0xFFFFFFFF
# from this many words the compiled fill wins over NumPy's, even with the state copied out
# of the bit generator and back
_COMPILED_MIN_WORDS = 1 << 16


_UNSEEDED = None  # made with the first bit generator: `import ember` leaves numpy.random alone


def _unseeded():
    """A seed for a bit generator that is seeded again at once: no entropy, no hashing."""
    global _UNSEEDED
    if _UNSEEDED is None:
        from numpy.random.bit_generator import ISeedSequence

        class _Unseeded(ISeedSequence):
            def generate_state(self, n_words: int, dtype=np.uint32) -> np.ndarray:
                return np.zeros(n_words, dtype)

        _UNSEEDED = _Unseeded()
    return _UNSEEDED


def init_genrand(seed: int) -> np.ndarray:
    """The 624-word key of ``init_genrand(seed & 0xffffffff)`` (Matsumoto & Nishimura)."""
    key = np.empty(STATE_WORDS, dtype=np.uint32)
    word = seed & _LOW_32
    key[0] = word
    # state[j] = 1812433253 * (state[j-1] ^ (state[j-1] >> 30)) + j  (mod 2^32): sequential
    for j in range(1, STATE_WORDS):
        word = (1812433253 * (word ^ (word >> 30)) + j) & _LOW_32
        key[j] = word
    return key


# torch's CPUGeneratorImplState, byte for byte (torch.get_rng_state() is this struct's bytes);
# the legacy layout is the same without the float-normal tail (5048 bytes).
TORCH_STATE = np.dtype(
    [
        ("the_initial_seed", "<u8"),
        ("left", "<i4"),
        ("seeded", "<i4"),
        ("next", "<u8"),
        ("state", "<u8", (STATE_WORDS,)),
        ("normal_x", "<f8"),
        ("normal_y", "<f8"),
        ("normal_rho", "<f8"),
        ("normal_is_valid", "<i4"),
        ("_pad", "V4"),
        ("next_float_normal_sample", "<f4"),
        ("is_next_float_normal_sample_valid", "u1"),
        ("_tail_pad", "V3"),
    ]
)
LEGACY_STATE_SIZE = TORCH_STATE.itemsize - 8


class MT19937:
    """The engine: raw 32-bit words, 64-bit words as torch pairs them, and torch's state bytes.

    ``next_double_normal`` / ``next_float_normal`` are the second Box-Muller values that
    torch's scalar normal sampler caches on the generator; they are part of the state.
    """

    __slots__ = ("_bits", "_numpy", "initial_seed", "next_double_normal", "next_float_normal")

    def __init__(self, seed: int):
        # NumPy's bit generator is made on first use (the default generator's too, so that
        # `import ember` does not load numpy.random), seeded with initial_seed then
        self._bits = self._numpy = None
        self.seed(seed)

    @property
    def bits(self):
        """NumPy's ``MT19937`` holding the twister's state."""
        if self._bits is None:
            self._make_bits()
        return self._bits

    @property
    def numpy(self):
        """A NumPy ``Generator`` on :attr:`bits`: its full-range uint32 draws are the raw
        words, in order, and faster than ``random_raw``."""
        if self._numpy is None:
            self._make_bits()
        return self._numpy

    def _make_bits(self) -> None:
        # seeded at once: skip the entropy-hashing seed NumPy would make first (~0.2 ms; a
        # RandomSampler builds a generator every epoch)
        self._bits = np.random.MT19937(_unseeded())
        self._numpy = np.random.Generator(self._bits)
        self._seed_bits(self.initial_seed)

    def seed(self, seed: int) -> None:
        self.initial_seed = seed
        self.next_double_normal = None
        self.next_float_normal = None
        if self._bits is not None:  # else _make_bits seeds it
            self._seed_bits(seed)

    def _seed_bits(self, seed: int) -> None:
        # pos 624: the first draw twists, as torch's left_ == 1 does. NumPy's legacy seeding
        # is this init_genrand in C (what RandomState(seed) runs), 100x faster than the loop
        legacy = getattr(self._bits, "_legacy_seeding", None)
        if legacy is not None:
            legacy(seed & _LOW_32)
            return
        self._bits.state = {
            "bit_generator": "MT19937",
            "state": {"key": init_genrand(seed), "pos": STATE_WORDS},
        }

    def words(self, n: int) -> np.ndarray:
        """``n`` draws of torch's ``random()`` (uint32)."""
        kernels = jit.module("random_jit") if n >= _COMPILED_MIN_WORDS else None
        if kernels is None:
            return self.numpy.integers(0, 1 << 32, n, dtype=np.uint32)
        with self.bits.lock:  # NumPy's own draws hold it too
            inner = self.bits.state["state"]
            key = np.array(inner["key"], dtype=np.uint32)  # a copy, advanced in place
            out, pos = kernels.mt19937_words(key, int(inner["pos"]), n)
            self.bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        return out

    def words64(self, n: int) -> np.ndarray:
        """``n`` draws of torch's ``random64()``: the first word is the high half."""
        pairs = self.words(2 * n).view(np.uint64)  # little-endian: the first word is low
        return (pairs << np.uint64(32)) | (pairs >> np.uint64(32))

    # --- torch's ByteTensor state ----------------------------------------------------------
    def to_bytes(self) -> np.ndarray:
        inner = self.bits.state["state"]
        key, pos = np.asarray(inner["key"], dtype=np.uint32), int(inner["pos"])
        record = np.zeros((), dtype=TORCH_STATE)
        record["the_initial_seed"] = self.initial_seed
        record["seeded"] = 1
        record["state"] = key
        if pos == STATE_WORDS:  # a twist is due: torch's left == 1
            fresh = int(key[0]) == self.initial_seed & _LOW_32 and _is_seeded_key(key)
            record["left"], record["next"] = 1, 0 if fresh else STATE_WORDS
        else:  # torch decrements left and reads state[next++]: left + next == 625
            record["left"], record["next"] = STATE_WORDS + 1 - pos, pos
        if self.next_double_normal is not None:
            record["normal_is_valid"] = 1
            record["normal_y"] = self.next_double_normal
        if self.next_float_normal is not None:
            record["is_next_float_normal_sample_valid"] = 1
            record["next_float_normal_sample"] = self.next_float_normal
        return np.frombuffer(record.tobytes(), dtype=np.uint8).copy()

    def from_bytes(self, raw: np.ndarray) -> None:
        size = raw.size
        if size not in (TORCH_STATE.itemsize, LEGACY_STATE_SIZE):
            raise RuntimeError(
                f"Expected either a CPUGeneratorImplStateLegacy of size {LEGACY_STATE_SIZE} "
                f"or a CPUGeneratorImplState of size {TORCH_STATE.itemsize} but found the input "
                f"RNG state size to be {size}"
            )
        padded = np.zeros(TORCH_STATE.itemsize, dtype=np.uint8)
        padded[:size] = raw
        record = padded.view(TORCH_STATE)[0]
        left, nxt = int(record["left"]), int(record["next"])
        if not (record["seeded"] and 0 < left <= STATE_WORDS and nxt <= STATE_WORDS):
            raise RuntimeError("Invalid mt19937 state")
        key = record["state"].astype(np.uint32)
        pos = STATE_WORDS if left == 1 else nxt
        self.bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self.initial_seed = int(record["the_initial_seed"])
        self.next_double_normal = None
        self.next_float_normal = None
        if record["normal_is_valid"]:
            if size == LEGACY_STATE_SIZE:  # the legacy record kept rho and x, not the sample
                theta = 2.0 * np.pi * float(record["normal_x"])
                self.next_double_normal = float(record["normal_rho"]) * np.sin(theta)
            else:
                self.next_double_normal = float(record["normal_y"])
        if size != LEGACY_STATE_SIZE and record["is_next_float_normal_sample_valid"]:
            self.next_float_normal = float(record["next_float_normal_sample"])


def _is_seeded_key(key: np.ndarray) -> bool:
    """Whether ``key`` is still ``init_genrand``'s output (no twist since seeding)."""
    previous = key[:-1].astype(np.uint64)
    expected = (
        np.uint64(1812433253) * (previous ^ (previous >> np.uint64(30)))
        + np.arange(1, STATE_WORDS, dtype=np.uint64)
    ) & np.uint64(_LOW_32)
    return bool((expected == key[1:]).all())
