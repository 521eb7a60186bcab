"""
Cleaning noisy labels with private data values
==============================================

``breast_cancer`` with 30% of the training labels flipped. A logistic
regression is trained on all the data, and on the data left after dropping
the 30% lowest-valued samples, with values computed without privacy, with
the library's default private values at epsilon 1, 3 and 10, and with the
private label-quality score at epsilon 3. Then a ``GridSearchCV`` tunes the
valuator's ``epsilon``: every fit of the grid releases new noisy gradients
of its training samples, so tuning on private data spends privacy too;
:func:`skdpval.privacy_spent` adds it up. The validation set is public and
passed to every fit; the folds are not stratified (stratified folds would
read the private labels).
"""

# %%
import matplotlib.pyplot as plt
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold

from skdpval import DPDataValuator, DPFilteredClassifier, DPLabelQuality, privacy_spent
from skdpval.datasets import load_noisy_classification

data = load_noisy_classification("breast_cancer", flip_fraction=0.3, random_state=0)
fit_on = dict(X_val=data.X_val, y_val=data.y_val)

# %%
# Test accuracy after filtering with each kind of value.
settings = {"no filtering": None,
            "no DP": DPDataValuator(noise="none", n_permutations=500, random_state=0)}
for epsilon in (1, 3, 10):
    settings[f"values, eps={epsilon}"] = DPDataValuator(
        epsilon=epsilon, n_permutations=500, random_state=0)
settings["label score, eps=3"] = DPLabelQuality(epsilon=3, random_state=0)
accuracy = {}
for label, valuator in settings.items():
    if valuator is None:
        model = LogisticRegression().fit(data.X_train, data.y_train)
    else:
        model = DPFilteredClassifier(valuator, LogisticRegression(), drop_fraction=0.3)
        model.fit(data.X_train, data.y_train, **fit_on)
    accuracy[label] = model.score(data.X_test, data.y_test)
    print(f"{label:<22} test accuracy {accuracy[label]:.3f}")

# %%
# Tuning epsilon by cross-validation (each of the 2 x 3 fits, and the
# refit, spends privacy on the samples it values).
search = GridSearchCV(
    DPFilteredClassifier(DPDataValuator(n_permutations=300, random_state=0),
                         drop_fraction=0.3),
    {"valuator__epsilon": [1, 3]}, cv=KFold(3, shuffle=True, random_state=0),
    n_jobs=2)
search.fit(data.X_train, data.y_train, **fit_on)
# The cross-validation scores are measured on the noisy training labels, so
# they sit near 0.6; the clean test set tells the real story.
print("best", search.best_params_, "cv accuracy", round(search.best_score_, 3))
spent = privacy_spent(search)
print("test accuracy", round(search.score(data.X_test, data.y_test), 3),
      "epsilon of the refit:", round(search.best_estimator_.valuator_.epsilon_, 3),
      f"| the whole search: epsilon {spent['epsilon']:.1f} at delta "
      f"{spent['delta']:g}, {spent['max_fits_per_party']} fits per sample")

# %%
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.barh(list(accuracy), list(accuracy.values()), color="tab:blue")
ax.set_xlim(0.5, 1.0)
ax.set_xlabel("test accuracy (30% flipped training labels, 30% dropped)")
fig.tight_layout()
plt.show()
