"""``python -m skdpval``: the command line (:mod:`skdpval.cli`); without a
subcommand it runs the demo."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
