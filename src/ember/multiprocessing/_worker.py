"""The entry point of one process started by ``ember.multiprocessing.spawn``.

``python -m ember.multiprocessing._worker PAYLOAD INDEX``: prepares the interpreter as
``multiprocessing``'s spawn start method does (``sys.path``, working directory, the parent's
``__main__`` imported as ``__mp_main__``), then calls ``fn(INDEX, *args)``. An exception is
written with its traceback to ``PAYLOAD.error-INDEX`` for the parent to re-raise.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.spawn
import os
import pickle
import signal
import sys
import traceback

from .. import _shared_memory


def _release_and_die(signum, frame) -> None:
    """SIGTERM (the parent ending the workers): give back the shared memory this worker holds,
    then die of the signal as before."""
    _shared_memory.release_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def main(payload_path: str, index: int) -> None:
    signal.signal(signal.SIGTERM, _release_and_die)
    with open(payload_path, "rb") as f:
        payload = pickle.load(f)
    with open(f"{payload_path}.pid-{index}", "w") as f:
        f.write(str(os.getpid()))  # lets the parent kill this process if its mpiexec is stuck
    try:
        multiprocessing.spawn.prepare(payload["preparation"])
        multiprocessing.current_process().authkey = payload["authkey"]
        fn, args = pickle.loads(payload["calls"][index])
        open(f"{payload_path}.received-{index}", "w").close()  # its shared memory is its own now
        fn(index, *args)
    except KeyboardInterrupt:
        pass  # the parent is tearing the workers down
    except BaseException:
        with open(f"{payload_path}.error-{index}", "w") as f:
            f.write(traceback.format_exc())
        sys.stdout.flush()
        sys.stderr.flush()
        _shared_memory.release_all()  # the exit below runs no finalizers
        # skip MPI_Finalize: it would wait for ranks that may be blocked on this one
        os._exit(1)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
