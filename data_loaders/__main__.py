"""``python -m data_loaders import-study FILE --title T ...`` (see :mod:`data_loaders.cli`).

A command line that :func:`data_loaders.command_args.refused_early` refuses is answered
before pandas and the data model are loaded (a hostile flag or recipe costs the
interpreter's start, not the data model's); every other one runs :func:`data_loaders.cli.main`.
"""

import sys

from data_loaders.command_args import refused_early

refusal = refused_early(sys.argv[1:])
if refusal is not None:
    print("error: " + " ".join(refusal.split()), file=sys.stderr)
    raise SystemExit(2)

from data_loaders.cli import main  # noqa: E402  (only for a command line that passed)

raise SystemExit(main())
