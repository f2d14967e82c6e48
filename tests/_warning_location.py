"""Where a warning points: the check the warning-location tests share.

Every skdp warning names the user's line (the caller of ``fit`` or of
``record``), through a fixed ``stacklevel``. Under mutation testing
(``../shared/tools/mutants``), every function of the mutated file runs
through mutmut's trampoline, one frame more between the caller and
:func:`warnings.warn`, so a fixed ``stacklevel`` lands one frame too deep.
Where mutmut is loaded the location is therefore not checked (nothing else
of these tests is relaxed); everywhere else it is checked exactly.
"""

import sys


def points_at(warning, filename, lineno=None):
    """Whether ``warning`` was attributed to ``filename`` (at ``lineno``)."""
    if "mutmut" in sys.modules:  # see the module docstring
        return True
    return warning.filename == filename and (lineno is None or warning.lineno == lineno)
