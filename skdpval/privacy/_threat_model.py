"""The threat model: who may see which output (central or joint differential privacy).

- ``"central"``: every output may be published. Each party's value is
  private against everybody, its own label included, so no mechanism finds
  flipped labels with expected AUC above ``Phi(sqrt(2) mu)``.
- ``"joint"`` (Kearns, Pai, Roth and Ullman 2014): a trusted curator
  computes the values and delivers each owner its own value only. The
  values delivered to all owners but one, together, are DP with respect to
  that one's data. The mechanism releases a *billboard* under the budget
  (everything that depends on more than one owner's data) and computes each
  owner's value from the billboard and that owner's rows only: by the
  billboard lemma (Hsu, Huang, Roth, Roughgarden and Wu 2014) the other
  owners' values, together, are post-processing of the billboard given
  their own rows, so they inherit its guarantee. An owner's own value may
  read its own rows exactly, so the limit ``Phi(sqrt(2) mu)`` does not
  apply to it.

The parameter and its documentation are declared here once; the valuators
take the constraint and the paragraph (:func:`with_threat_model_doc`), and
the central releases (ranks, filters, plots, ``privacy_spent``) ask
:func:`refuse_in_joint_mode` before any work.
"""

import numpy as np
from sklearn.utils._param_validation import StrOptions

THREAT_MODEL_CONSTRAINT = [StrOptions({"central", "joint"})]

THREAT_MODEL_DOC = """\
Who may see the outputs. ``"central"``: every output may be published;
each party's value is private against everybody, its own label
included. ``"joint"``: a trusted curator delivers each owner (a party:
a sample, a group, a client) its own value only, through
:meth:`owner_value`. Everything that depends on more than one owner's
data (the billboard) is released under the budget, and an owner's value
is computed from the billboard and its own rows only, so the values
delivered to all other owners, together, are ``(epsilon, delta)``-DP
with respect to its data (joint differential privacy). ``values_`` is
then the curator's view, not for release; every aggregate of the
values (``rank_``, the filters, the plots, ``privacy_spent``) is a
central release and refuses. See the user guide's privacy model."""

# How the marker line in a valuator's docstring reads.
_MARKER = "        %(threat_model)s"


def with_threat_model_doc(cls):
    """Class decorator: the shared paragraph in place of ``%(threat_model)s``."""
    indented = "\n".join("        " + line if line else ""
                         for line in THREAT_MODEL_DOC.splitlines())
    cls.__doc__ = cls.__doc__.replace(_MARKER, indented)
    return cls


def is_joint(estimator):
    """Whether ``estimator`` values under the joint threat model: as fitted
    (``threat_model_``), or before a fit as its parameter says."""
    fitted = estimator.__dict__.get("threat_model_") if hasattr(
        estimator, "__dict__") else None
    return (fitted or getattr(estimator, "threat_model", "central")) == "joint"


def refuse_in_joint_mode(estimator, what, error=ValueError):
    """Raise ``error`` for ``what``, a central release of the values, when
    ``estimator`` values under the joint threat model."""
    if is_joint(estimator):
        raise error(
            f"{what} is a central release of every owner's value, and "
            f"{type(estimator).__name__} has threat_model='joint': its values "
            "are delivered each to its own owner only (owner_value), and an "
            "aggregate of them has no guarantee. Use threat_model='central' to "
            "publish values, ranks or a filtered data set.")


JOINT = ("joint: a trusted curator sees every owner's rows and value "
         "(values_) and delivers each owner its own value only (owner_value); "
         "the values delivered to all owners but one are together as private "
         "with respect to that one's data as the billboard (mu, epsilon, delta "
         "of this report)")


def declare_joint(mechanism, billboard, owner_value):
    """Put the joint threat model into the report ``mechanism`` will write:
    ``"threat_model"`` and ``details["joint"]``. Call it once the parts are
    calibrated.

    ``billboard``: what the billboard holds (the report's parts are its
    releases; its guarantee is the report's ``mu``, ``epsilon`` and
    ``delta``: 0 when it is empty); ``owner_value``: what an owner's value
    is computed from.
    """
    mu, epsilon, _, _ = mechanism.guarantee()
    mechanism.threat_model = JOINT
    mechanism.details["joint"] = {
        "curator": "trusted: sees every owner's rows and value (values_)",
        "billboard": billboard,
        "billboard_guarantee": {"mu": float(mu), "epsilon": float(epsilon),
                                "delta": float(mechanism.delta)},
        "owner_value": owner_value,
        "owner_value_private_against": (
            "the other owners, jointly: the values delivered to all owners but "
            "one are (epsilon, delta)-DP with respect to that one's data "
            "(billboard lemma); an owner's own value reads its own rows exactly"),
        "max_noisy_label_auc_applies_to": (
            "the billboard only: an owner's own value is not bounded by it"),
    }


class OwnerValues:
    """Mixin: each owner's value delivered on its own, and ``rank_`` refused
    in joint mode."""

    def owner_value(self, owner):
        """The value to deliver to one owner: its own, and nobody else's.

        Under ``threat_model="joint"`` this is the only output meant for an
        owner: the values of all owners but one, each delivered to its own
        owner, are together differentially private with respect to that
        one's data. Under ``"central"`` it is ``values_[owner]``, public
        like every value.

        Parameters
        ----------
        owner : int
            The owner's index in ``values_``: a sample's row, or a group's
            position in ``groups_`` (a client's in ``clients_``).

        Returns
        -------
        value : float
            That owner's value.
        """
        values = self.values_
        index = int(owner)
        if index != owner or not 0 <= index < len(values):
            raise IndexError(
                f"owner must be an integer index in [0, {len(values)}), got {owner!r}.")
        if np.isnan(values[index]):
            raise ValueError(
                f"owner {index} was held out as the validation set: it has no value.")
        return float(values[index])

    @property
    def rank_(self):
        """Rank of each value, 1 the most valuable; 0 for held-out parties
        (a central release: refused under ``threat_model="joint"``)."""
        # An AttributeError, so that hasattr and getattr with a default say
        # "no ranks" rather than fail.
        refuse_in_joint_mode(self, "rank_", AttributeError)
        # Kept in the instance's dict under its own name (a property wins
        # over it): vars(), pickles and check_is_fitted see it as before.
        try:
            return self.__dict__["rank_"]
        except KeyError:
            raise AttributeError("rank_") from None

    @rank_.setter
    def rank_(self, rank):
        self.__dict__["rank_"] = rank
