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
import sys
import traceback


def main(payload_path: str, index: int) -> None:
    with open(payload_path, "rb") as f:
        payload = pickle.load(f)
    with open(f"{payload_path}.pid-{index}", "w") as f:
        f.write(str(os.getpid()))  # lets the parent kill this process if its mpiexec is stuck
    try:
        multiprocessing.spawn.prepare(payload["preparation"])
        multiprocessing.current_process().authkey = payload["authkey"]
        fn, args = pickle.loads(payload["calls"][index])
        fn(index, *args)
    except KeyboardInterrupt:
        pass  # the parent is tearing the workers down
    except BaseException:
        with open(f"{payload_path}.error-{index}", "w") as f:
            f.write(traceback.format_exc())
        sys.stdout.flush()
        sys.stderr.flush()
        # skip MPI_Finalize: it would wait for ranks that may be blocked on this one
        os._exit(1)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
