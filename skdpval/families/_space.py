"""Where a walk's releases live: the whole parameter space, or a public subspace.

The valuator asks the same five things of either (party gradients at the
initial model, a noiseless SGD pass, a utility, how far a unit release moves
the validation margins, and the walk problem); :class:`FullSpace` answers
with :mod:`skdpval.kernels._kernels` (the seed paper's Algorithm 1) and
:class:`Subspace` with :mod:`skdpval.kernels._subspace` (project, then clip, then
noise). The estimators never branch on which one they hold. ``walk``
describes the fit's walk to the set-up's walks, which run on its kernel
(:func:`skdpval.kernels._subspace.set_up_problem`).
"""

import numpy as np

from ..kernels import _kernels, _subspace
from ..walks._walk import make_problem


class FullSpace:
    """Releases of every parameter: ``(n_outputs, n_columns)`` a step."""

    basis = None
    release_dimension = "all parameters"

    def coordinates(self, n_params):
        """Numbers in one release: every parameter."""
        return int(n_params)

    def initial_theta(self, n_outputs, n_columns):
        """Where every walk starts: zero."""
        return np.zeros((n_outputs, n_columns))

    def party_gradients(self, theta, X, T, offsets, walk=None, **settings):
        """Unclipped gradient of each party at ``theta``: ``(n_parties, n_params)``."""
        gradients = _kernels.party_gradients(theta, X, T, offsets, **settings)
        return gradients.reshape(len(offsets) - 1, -1)

    def sgd_pass(self, X, T, walk=None, **model):
        """Parameters after one clipped, noiseless SGD pass from zero."""
        return _kernels.sgd_pass(X, T, theta_init=np.zeros((T.shape[1], X.shape[1])),
                                 **model)

    def utility(self, theta, X_val, T_val, labels_val, **settings):
        return _kernels.utility_of_theta(theta, X_val, T_val, labels_val, **settings)

    def utilities(self, thetas, X_val, T_val, labels_val, **settings):
        """:meth:`utility` of each of ``thetas``, in one call."""
        return _kernels.utilities_of_thetas(np.asarray(thetas), X_val, T_val,
                                            labels_val, **settings)

    def margin_scale(self, X_val, n_outputs):
        """RMS over validation rows of the norm of d(margins) / d(release)."""
        return float(np.sqrt(np.mean(n_outputs * np.sum(X_val**2, axis=1))))

    def problem(self, X, T, offsets, X_val, T_val, labels_val, *, line_range,
                line_intervals, **settings):
        """The full-space walk's problem (no line to tabulate)."""
        return make_problem(X, T, offsets, X_val, T_val, labels_val, **settings)


class Subspace:
    """Releases of ``z`` in ``theta = B^T z``: ``m`` numbers a step."""

    def __init__(self, basis):
        self.basis = basis
        self.release_dimension = int(basis.shape[0])

    def coordinates(self, n_params):
        """Numbers in one release: one per direction of the basis."""
        return self.release_dimension

    initial_theta = FullSpace.initial_theta

    def party_gradients(self, theta, X, T, offsets, **settings):
        """Unclipped gradient in ``z`` of each party at ``theta``: ``(n, m)``."""
        return _subspace.party_gradients(self.basis, theta, X, T, offsets, **settings)

    def sgd_pass(self, X, T, **model):
        """``theta = B^T z`` after one clipped, noiseless SGD pass from zero."""
        return _subspace.sgd_pass(self.basis, X, T, **model)

    def utility(self, theta, X_val, T_val, labels_val, **settings):
        return _subspace.utilities_of_thetas(self.basis, theta[None], X_val, T_val,
                                             labels_val, **settings)[0]

    def utilities(self, thetas, X_val, T_val, labels_val, **settings):
        """:meth:`utility` of each of ``thetas``, in one call."""
        return _subspace.utilities_of_thetas(self.basis, np.asarray(thetas), X_val,
                                             T_val, labels_val, **settings)

    def margin_scale(self, X_val, n_outputs):
        """RMS over validation rows of the norm of d(margins) / d(release)."""
        F = _subspace.project_rows(self.basis, X_val, n_outputs)
        return float(np.sqrt(np.mean(np.sum(F**2, axis=(1, 2)))))

    def problem(self, X, T, offsets, X_val, T_val, labels_val, *, line_range,
                line_intervals, **settings):
        """The subspace walk's problem; along one direction the utility is
        tabulated over ``line_range`` (:mod:`skdpval.kernels._line`)."""
        return _subspace.make_subspace_problem(
            self.basis, X, T, offsets, X_val, T_val, labels_val, **settings,
            line_range=line_range, line_intervals=line_intervals)


def check_basis(subspace, n_params, layout):
    """``subspace`` as an ``(m, n_params)`` array with finite orthonormal rows;
    ``layout`` says how the parameters are laid out (for the message)."""
    basis = np.asarray(subspace, dtype=np.float64)
    if basis.ndim != 2 or basis.shape[1] != n_params or len(basis) < 1:
        raise ValueError(
            f"subspace must be 'public', None or an array of shape (m, "
            f"{n_params}) (m >= 1, one column per parameter: {layout}), got "
            f"shape {basis.shape}.")
    if not np.all(np.isfinite(basis)) or not np.allclose(
            basis @ basis.T, np.eye(len(basis)), atol=1e-8):
        raise ValueError("subspace must have finite, orthonormal rows "
                         "(basis @ basis.T equal to the identity).")
    return basis


def space_of(basis):
    """:class:`FullSpace` for ``None``, else :class:`Subspace` of ``basis``."""
    return FullSpace() if basis is None else Subspace(basis)
