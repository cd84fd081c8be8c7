"""Hypothesis profiles: ``ci`` (the default) is reproducible and has no deadline,
because the first call of a compiled kernel may load it from numba's cache."""

import os

from hypothesis import settings

settings.register_profile("ci", deadline=None, derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
