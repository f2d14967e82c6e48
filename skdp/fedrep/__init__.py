"""User-level private personalisation with a shared representation (paper 001)."""

from ._fedrep import DPFedRep

__all__ = ["DPFedRep"]
