"""The ``ember`` command.

- ``ember demo`` trains a digits classifier end to end (``demo.py``);
- ``ember inspect FILE`` lists a checkpoint's tensors with statistics (``inspect.py``);
- ``ember diff A B`` compares two checkpoints tensor by tensor (``diff.py``);
- ``ember run --nproc-per-node N script.py`` starts a script on N processes (``run.py``).

A mistake in how it is called is one line on stderr and exit code 2 (``ember`` alone prints
the usage on stderr, exit code 2); Ctrl-C is exit code 130 and SIGTERM 143, with one line; only
a bug in ember shows a traceback (exit code 70), with a line asking to report it.

Example::
    >>> from ember import cli
    >>> cli.main(["diff", "torch.pt", "ember.safetensors"])  # 0 equal, 1 different, 2 usage
"""

from __future__ import annotations

import os
import sys
import traceback

from .. import __version__
from . import demo, diff, inspect, run
from ._arguments import Parser, UsageError
from .demo import MODELS, OPTIMIZERS, build_model, build_optimizer

__all__ = ["MODELS", "OPTIMIZERS", "build_model", "build_optimizer", "main", "parser"]

EXIT_USAGE = 2
EXIT_BUG = 70  # BSD's EX_SOFTWARE: distinct from diff's 1 ("the files differ")
EXIT_INTERRUPTED = 130  # what a shell reports for Ctrl-C


def parser() -> Parser:
    p = Parser(
        prog="ember",
        description="ember: tensors with reverse-mode autodiff and the PyTorch API.",
    )
    p.add_argument("--version", action="version", version=f"ember {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for command in (demo, inspect, diff, run):
        command.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``ember`` with ``argv`` (default: the process's arguments); returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    p = parser()
    command = "ember"
    try:
        if argv[:1] == ["run"]:  # every flag belongs to the launcher, which parses its own
            command = "ember run"
            return run.run_argv(argv[1:])
        args, unknown = p.parse_known_args(argv)
        if args.command is not None:
            command = f"ember {args.command}"
        if unknown:  # named by the command they were given to, not by the top-level parser
            raise UsageError(
                f"unrecognized arguments: {' '.join(unknown)} (see `{command} --help`)"
            )
        if args.command is None:  # no command is a mistake too: what there is, on stderr
            p.print_help(sys.stderr)
            return EXIT_USAGE
        return args.run(args)
    except UsageError as exc:
        print(f"{exc.command or command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # before a command took Ctrl-C over
        print(f"{command}: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`ember inspect big.pt | head`): nothing more to say, and Python's
        # flush at exit must not complain either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception:
        traceback.print_exc()
        print(
            "ember: this is a bug in ember, not a mistake in how it was called; please report "
            "it with the command you ran and the traceback above.",
            file=sys.stderr,
        )
        return EXIT_BUG
