"""Which family the default estimators choose on the bundled sets (issue 44).

``PYTHONPATH=<code> python benchmarks/family_choice_bundled.py``: the limit
protocol's splits of the four bundled sets (5 seeds, epsilon 3, a
``noise_seed`` per split: paired between code versions), for
``DPDataValuator()`` and ``DPLabelQuality()``: the model chosen and the sum
of the values (equal sums: the same values as another code version's).
Results: ``benchmarks/results/family_choice_bundled.jsonl``.
"""
import json
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
warnings.simplefilter("ignore")
from quality import limit_data  # noqa: E402

from skdpval import DPDataValuator, DPLabelQuality  # noqa: E402
for name in ("breast_cancer", "diabetes", "digits_3_vs_8", "classification"):
    for seed, d in enumerate(limit_data(name, 5)):
        X, y, Xv, yv = d.X_train, d.y_train, d.X_val, d.y_val
        out = {}
        for label, make in (("data", lambda: DPDataValuator(epsilon=3.0, random_state=seed, noise_seed=seed)),
                            ("label", lambda: DPLabelQuality(epsilon=3.0, random_state=seed, noise_seed=seed))):
            f = make().fit(X, y, X_val=Xv, y_val=yv)
            out[label] = (getattr(f, "model_choice_", None) or {}).get("chosen"), f.values_
        print(json.dumps(dict(dataset=name, seed=seed, n_val=len(yv), n=len(y),
                              data_choice=out["data"][0], label_choice=out["label"][0],
                              data_sum=float(np.sum(out["data"][1])), label_sum=float(np.sum(out["label"][1])))))
