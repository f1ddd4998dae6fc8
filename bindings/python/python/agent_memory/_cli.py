"""The ``agent-memory`` console script: the whole command line, in this process."""

import sys

from . import _native


def main() -> None:
    """Runs ``agent-memory`` on ``sys.argv`` and exits with its status."""
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(_native.exit_status(["agent-memory", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
