"""The privacy layer: the one gate between private data and what is released.

Accounting, the mechanism of a fit (calibration, composition, the report),
the secure noise (ChaCha20, the samplers, the grid), the noise policies, the
threat models and :func:`~skdpval.privacy_spent`. It imports nothing else of
skdpval (but :mod:`skdpval.exceptions`); every other layer may import it.
"""
