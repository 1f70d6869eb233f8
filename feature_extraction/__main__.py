"""``python -m feature_extraction``: see :mod:`feature_extraction.cli`."""

from feature_extraction.cli import main

raise SystemExit(main())
