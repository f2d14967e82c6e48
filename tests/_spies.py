"""Spies on the noise calls a module makes (white-box tests)."""


def gaussian_noise_stds(monkeypatch, module):
    """The standard deviation of every ``add_gaussian_noise`` call made
    through ``module``, in order (the list fills as the calls are made)."""
    stds = []
    real = module.add_gaussian_noise

    def spy(value, std, rng):
        stds.append(std)
        return real(value, std, rng)

    monkeypatch.setattr(module, "add_gaussian_noise", spy)
    return stds


def gaussian_noise_calls(monkeypatch, module):
    """``(value, std, noisy)`` of every ``add_gaussian_noise`` call made
    through ``module``, in order: what was released, and with what."""
    calls = []
    real = module.add_gaussian_noise

    def spy(value, std, rng):
        noisy = real(value, std, rng)
        calls.append((value, std, noisy))
        return noisy

    monkeypatch.setattr(module, "add_gaussian_noise", spy)
    return calls
