"""The import of an analyst's own choice file, as a pipeline of five stages.

Each stage is one module and one function of the module's name
(``data_loaders.pipeline.read.read``); each returns a typed value (a frozen
dataclass) that the next stage reads, and up to the built study each value holds the one
before it (the last reaches the upload itself):

1. :mod:`~data_loaders.pipeline.read`: the upload's bytes read into a table
   (``read`` -> :class:`ReadFile`);
2. :mod:`~data_loaders.pipeline.interpret`: the layout interpreted, which columns hold
   what, the attribute table, every cell checked, the questions the file leaves open
   (``interpret`` -> :class:`Layout`);
3. :mod:`~data_loaders.pipeline.describe`: what every column and row means, decided
   (the selection, units, money and time, the choice situations and the rows dropped,
   the alternatives' constants, each column's role; ``describe`` ->
   :class:`Description`);
4. :mod:`~data_loaders.pipeline.build`: the study built: items, comparisons, choice
   situations, respondent features, the analysis plan (``build`` -> :class:`Built`);
5. :mod:`~data_loaders.pipeline.save`: the study folder written (``save`` ->
   :class:`UserStudy`).

The command line (``python -m data_loaders import-study``) and the dashboard's
Add-a-study form both call :func:`data_loaders.study_store.save_study`, which runs the
five stages (:func:`data_loaders.study_files.check_upload` runs the first four);
:func:`data_loaders.study_files.build_study`, the loader of a saved study and of
``--data FILE``, runs stages 2 to 4 on a table already read. A stage that refuses raises
:class:`Refused` with every :class:`Problem` it found.
"""

from __future__ import annotations

from data_loaders.pipeline import build, describe, interpret, read, save
from data_loaders.pipeline.build import Built
from data_loaders.pipeline.describe import Description
from data_loaders.pipeline.interpret import Layout
from data_loaders.pipeline.problems import Problem, Refused
from data_loaders.pipeline.read import ReadFile
from data_loaders.pipeline.save import UserStudy

__all__ = [
    "STAGES",
    "Built",
    "Description",
    "Layout",
    "Problem",
    "ReadFile",
    "Refused",
    "UserStudy",
    "build",
    "describe",
    "interpret",
    "read",
    "save",
]

#: The stage functions in order: each one's value is the next one's first argument.
STAGES = (read.read, interpret.interpret, describe.describe, build.build, save.save)
