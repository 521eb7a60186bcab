import json, os, numpy as np
from sklearn.datasets import make_classification
from skdpval import DPDataValuator, DPLabelQuality
from skdpval.datasets import flip_labels
X, y = make_classification(20050, 20, n_informative=8, class_sep=1.2, random_state=0)
Xt, yt, Xv, yv = X[:20000], y[:20000], X[20000:], y[20000:]
yn, _ = flip_labels(yt, 0.3, random_state=0)
for name, make in [("defaults", lambda s: DPDataValuator(epsilon=3.0, delta=5e-5, random_state=s)),
                   ("label score", lambda s: DPLabelQuality(epsilon=3.0, delta=5e-5, random_state=s))]:
    zs = []
    for pair in range(2):
        a = make(2 * pair).fit(Xt, yn, X_val=Xv, y_val=yv)
        b = make(2 * pair + 1).fit(Xt, yn, X_val=Xv, y_val=yv)
        z2 = (a.values_ - b.values_) ** 2 / (a.values_stderr_ ** 2 + b.values_stderr_ ** 2)
        zs.append(z2)
    z2 = np.concatenate(zs)
    print(json.dumps(dict(case="stderr_coverage_regime", setting=name, n=20000, n_val=50,
        flips=0.3, epsilon=3.0, delta=5e-5, pairs=2,
        public_model_private=bool(getattr(a, "public_model_fitted_privately_", False)),
        out_of_2se=round(float(np.mean(z2 > 4)), 4), mean_z2=round(float(np.mean(z2)), 3),
        load=round(os.getloadavg()[0], 2))))
