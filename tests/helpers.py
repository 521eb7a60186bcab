"""Test helpers."""


class FixedDraws:
    """Given permutations and noise, served as the walk draws them."""

    def __init__(self, permutations, noise=None):
        self.permutations, self.noise = permutations, noise
        self.has_noise = noise is not None

    def __call__(self, t, noise_out):
        if self.has_noise:
            noise_out[...] = self.noise[t]
        return self.permutations[t]
