"""The burn-in of q="auto": q = 0.9 against shorter counted tails, paired.

Every fit of a case uses the same split and the same noise stream
(``noise_seed``, a benchmark-only opt-in), so the differences are the
burn-in's. Prints one JSON object per case:

    python benchmarks/burn_in.py limit 10     # limit-suite sets, LF
    python benchmarks/burn_in.py points 10    # fidelity to noiseless values
    python benchmarks/burn_in.py groups 10    # group-level fidelity, k = 500
    python benchmarks/burn_in.py regime 3     # sep_1.2, sep_0.8, n_val 200, eps 1

Results: benchmarks/results/quality_burn_in.jsonl.
"""
import sys, json, warnings
sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
import numpy as np
from scipy.stats import spearmanr
import quality as Q
from skdpval import DPDataValuator
from skdpval.metrics import detection_auc_limit, noisy_label_auc
warnings.simplefilter('ignore')
QS = [0.9, 0.968, 0.98]
part = sys.argv[1]
seeds = int(sys.argv[2])
if part == 'limit':
    for name in ['breast_cancer', 'diabetes', 'digits_3_vs_8', 'classification']:
        data = Q.limit_data(name, seeds)
        for eps in (1.0, 3.0, 10.0):
            lim = detection_auc_limit(eps, Q.DELTA)
            res = {}
            for q in QS:
                aucs = [noisy_label_auc(DPDataValuator(epsilon=eps, q=q, random_state=s, noise_seed=77+s).fit(
                    d.X_train, d.y_train, X_val=d.X_val, y_val=d.y_val).values_, d.is_noisy) for s, d in enumerate(data)]
                res[q] = round((np.mean(aucs) - .5) / (lim - .5), 4)
            print(json.dumps(dict(part=part, dataset=name, eps=eps, lf=res)), flush=True)
elif part == 'points':
    for name in ['breast_cancer', 'digits_3_vs_8']:
        for flip in (0.0, 0.3):
            data = [Q.load_noisy_classification(name, n_train=300, flip_fraction=flip, independent_flips=True,
                    validation_size=0.25, test_size=0.0, random_state=s) for s in range(seeds)]
            refs = [DPDataValuator(noise='none', random_state=s).fit(d.X_train, d.y_train, X_val=d.X_val, y_val=d.y_val).values_ for s, d in enumerate(data)]
            for eps in (1.0, 3.0, 10.0):
                res = {}
                for q in QS:
                    rho = [spearmanr(DPDataValuator(epsilon=eps, q=q, random_state=s, noise_seed=77+s).fit(
                        d.X_train, d.y_train, X_val=d.X_val, y_val=d.y_val).values_, refs[s])[0] for s, d in enumerate(data)]
                    res[q] = round(float(np.mean(rho)), 4)
                print(json.dumps(dict(part=part, dataset=name, flip=flip, eps=eps, spearman=res)), flush=True)
elif part == 'regime':
    from regime_data import regime_split
    for name in ['sep_1.2', 'sep_0.8']:
        for s in range(seeds):
            d = regime_split(name, s, 200)
            lim = detection_auc_limit(1.0, Q.DELTA)
            res = {}
            for q in [0.9, 0.95, 0.98]:
                v = DPDataValuator(epsilon=1.0, delta=Q.DELTA, q=q, random_state=s, noise_seed=1000 + s).fit(
                    d['X_train'], d['y_train'], X_val=d['X_val'], y_val=d['y_val']).values_
                res[q] = round((noisy_label_auc(v, d['flipped']) - .5) / (lim - .5), 4)
            print(json.dumps(dict(part=part, dataset=name, seed=s, n_val=200, eps=1.0, lf=res)), flush=True)
elif part == 'groups':
    data = [Q.group_data(s) for s in range(seeds)]
    for unit in ('record', 'group'):
        fit = lambda s, **p: DPDataValuator(n_permutations=500, privacy_unit=unit, random_state=s, **p).fit(
            data[s][0], data[s][1], X_val=data[s][3], y_val=data[s][4], groups=data[s][2]).values_
        refs = [fit(s, noise='none') for s in range(seeds)]
        for eps in (1.0, 3.0, 10.0):
            res = {}
            for q in [0.9, 0.968]:
                res[q] = round(float(np.mean([spearmanr(fit(s, epsilon=eps, q=q, noise_seed=77+s), refs[s])[0] for s in range(seeds)])), 4)
            print(json.dumps(dict(part=part, unit=unit, eps=eps, spearman=res)), flush=True)
