"""``python -m pbo_core.experiments``: case-study experiments (see ``case_studies``)."""

from pbo_core.experiments.case_studies import main

raise SystemExit(main())
