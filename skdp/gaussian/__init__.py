"""Differentially private sampling from Gaussian distributions.

:class:`DPGaussianSampler` releases either a bounded-data Gaussian model
(clipping plus the Gaussian mechanism, then unlimited sampling) or, at very
large n, the certified unbounded sampler of Iverson, Kamath & Mouzakis
(paper 004); :func:`required_n_samples` gives the latter's certified size.
"""

from ._certify import required_n_samples
from ._sampler import DPGaussianSampler, joint_sensitivity

__all__ = ["DPGaussianSampler", "joint_sensitivity", "required_n_samples"]
