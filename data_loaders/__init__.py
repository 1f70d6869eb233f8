"""Loaders that turn case-study files into :class:`pbo_core.data.Study` objects."""
