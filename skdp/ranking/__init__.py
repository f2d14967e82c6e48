"""Differentially private ranking from pairwise comparisons (Bradley–Terry–Luce)."""

from ._bradley_terry import DPBradleyTerry
from ._pairs import PairsEncoder, pairs_to_design

__all__ = ["DPBradleyTerry", "PairsEncoder", "pairs_to_design"]
