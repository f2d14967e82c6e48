"""pytest configuration for the doctest collection of the ``skdp`` package."""

import importlib.util

# skdp/_dask.py is the optional Dask backend (the ``distributed`` extra): its
# doctests and import need dask, so it is not collected where dask is missing
# (tests/test_dask.py then skips as a whole).
collect_ignore = []
if importlib.util.find_spec("dask") is None:
    collect_ignore.append("skdp/_dask.py")
