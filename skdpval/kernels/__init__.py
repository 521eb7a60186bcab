"""Numba kernels: losses, walks, reductions and orders.

Plain functions on contiguous arrays and scalars. They import the privacy
layer (the release of a clipped statistic) and nothing above it.
"""
