"""Model families: how a scikit-learn estimator's objective reaches the kernels.

The mapping from estimators to objectives, the spaces a walk lives in and
the parties' layout. Imports the kernels and the privacy layer.
"""
