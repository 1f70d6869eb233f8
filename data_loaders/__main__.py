"""``python -m data_loaders import-study FILE --title T ...`` (see :mod:`data_loaders.cli`)."""

from data_loaders.cli import main

raise SystemExit(main())
