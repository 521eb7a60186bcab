"""Running walks: waves of permutations, on threads or a Dask cluster.

Imports the families, the kernels and the privacy layer.
"""
