#!/usr/bin/env bash
# The mutation table: scale the noise in the source at each draw site by
# 0.8 and by 0.5, one site at a time, in a copy of the package, and run the
# checks that must pass at the claimed noise: the white-box calibration
# tests (the scale handed to the sampler, tests/test_secure_noise.py) and
# the audits. Each site and factor must make at least one of them fail.
#
#     bash benchmarks/mutations.sh [factor ...]     (default: 0.8 0.5)
set -u
status=0
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python}
# The runs happen in a copy of the package: a relative interpreter path
# would not resolve there (made absolute, links kept: a venv's python is one).
if [[ $python == */* ]]; then
  python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
fi
factors=${*:-0.8 0.5}
# sed scripts with FACTOR for the factor.
declare -A edits=(
  [walk]='skdpval/_walk.py|s/WALK, lo, hi, self.noise_std \/ self.grid\[0\],/WALK, lo, hi, FACTOR * self.noise_std \/ self.grid[0],/'
  [federated]='skdpval/_federated.py|s/FEDERATED, t, t + 1, noise_std \/ grid.gamma,/FEDERATED, t, t + 1, FACTOR * noise_std \/ grid.gamma,/'
  [label_score]='skdpval/_label_quality.py|s/^\( *\)noise_std \/ grid.gamma, np.empty((1, len(scores))))/\1FACTOR * noise_std \/ grid.gamma, np.empty((1, len(scores))))/'
  [laplace]='skdpval/_layered.py|s/LAYERED, grid_scale, n)/LAYERED, grid_scale * Fraction(FACTOR), n)/'
  [public_fit]='skdpval/_private_fit.py|s/PUBLIC_FIT, 0, n_steps, noise_std \/ grid.gamma,/PUBLIC_FIT, 0, n_steps, FACTOR * noise_std \/ grid.gamma,/'
)
for factor in $factors; do
  for site in walk federated label_score laplace public_fit; do
    file=${edits[$site]%%|*}
    script=${edits[$site]#*|}
    script=${script//FACTOR/$factor}
    copy=$(mktemp -d)
    cp -r "$root/skdpval" "$root/tests" "$root/pyproject.toml" "$copy/"
    sed -i "$script" "$copy/$file"
    changed=$(diff "$root/$file" "$copy/$file" | grep -c '^>')
    echo "=== noise x$factor at the $site draw site ($file, $changed line changed)"
    if [ "$changed" -ne 1 ]; then
      echo "ERROR: the edit must change exactly one line: update its pattern"
      status=1
      rm -rf "$copy"
      continue
    fi
    output=$(cd "$copy" && PYTHONPATH="$copy" "$python" -m pytest -p no:cacheprovider \
       -o addopts="" -q -rf tests/test_secure_noise.py tests/test_public_model.py \
       ${AUDIT_FILES:-tests/test_audit.py tests/test_audit_paths.py} \
       -k "calibrated_scale or passes_at_the_claimed or claimed_laplace" 2>&1)
    summary=$(echo "$output" | grep -E "^FAILED|passed|failed" | sed "s/ - .*//")
    echo "$summary"
    # A run that printed no summary did not run; one with no failure let
    # the weaker noise through: both are errors.
    if ! echo "$summary" | grep -q "^FAILED"; then
      echo "ERROR: no check failed (or the checks did not run):"
      echo "$output" | tail -5
      status=1
    fi
    rm -rf "$copy"
  done
done
exit $status
