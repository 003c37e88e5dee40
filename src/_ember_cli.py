"""The ``ember`` command's entry point, a module outside the package so that it starts before
``import ember`` does: Ctrl-C during that import (about half a second) ends as Ctrl-C does
after it, with one line and exit code 130, not a traceback. Everything else is
:func:`ember.cli.main`'s."""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from ember.cli import main as ember_main
    except KeyboardInterrupt:
        print("ember: interrupted (Ctrl-C)", file=sys.stderr)
        return 130
    return ember_main()


if __name__ == "__main__":
    sys.exit(main())
