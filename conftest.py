"""pytest configuration for the doctest collection of the ``skdp`` package."""

import importlib.util

# skdp/_dask.py is the optional Dask backend (the ``distributed`` extra): its
# doctests and import need dask, so it is not collected where dask is missing
# (tests/test_dask.py then skips as a whole).
collect_ignore = []
if importlib.util.find_spec("dask") is None:
    collect_ignore.append("skdp/_dask.py")


def pytest_sessionfinish(session, exitstatus):
    """Stop joblib's process workers (``n_jobs=2`` tests) before pytest returns.

    Left idle, loky's workers exit on their own minutes later; a harness that
    runs pytest in-process and then waits for its own child processes (the
    mutation tester, ``../shared/tools/mutants``) would reap one of them and
    fail. Shutting them down here leaves no child process behind.
    """
    from joblib.externals.loky import reusable_executor

    # The module's own handle: get_reusable_executor() would start one.
    executor = getattr(reusable_executor, "_executor", None)
    if executor is not None:
        executor.shutdown(wait=True)
