"""``python -m pbo_core.bench``: benchmark grids (see :mod:`pbo_core.experiments.bench`)."""

from pbo_core.experiments.bench import main

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
