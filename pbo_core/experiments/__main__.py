"""``python -m pbo_core.experiments``: case studies (see :mod:`pbo_core.experiments.cli`)."""

from pbo_core.experiments.cli import main

raise SystemExit(main())
