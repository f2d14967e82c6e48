"""Warnings and errors raised by skdp."""


class PrivacyLeakWarning(UserWarning):
    """A requested operation may release more than the stated guarantee covers.

    Raised, for example, when a quantity that influences the released model would be
    read from the training data without being paid for.
    """


class InsufficientSamplesError(ValueError):
    """The data set is too small for the requested privacy level to be meaningful."""


class MechanismFailedError(RuntimeError):
    """A privacy mechanism could not be calibrated or run to its stated guarantee."""
