#!/usr/bin/env bash
# The mutation table: scale the noise in the source at each draw site by
# 0.8 and by 0.5, one site at a time, in a copy of the package, and run the
# checks that must pass at the claimed noise: the white-box calibration
# tests (the scale handed to the sampler, tests/test_secure_noise.py), the
# audits and the statistical tests at the true noise (tests/test_dp_test.py).
# Each site and factor must make at least one of them fail.
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
  [gaussian]='skdpval/privacy/_mechanism.py|s/gaussian_noise(self._key, self.kind, lo, hi, self.std,/gaussian_noise(self._key, self.kind, lo, hi, FACTOR * self.std,/'
  [laplace]='skdpval/privacy/_mechanism.py|s/laplace_noise(self._secret_key(), part.kind, part.grid_scale,/laplace_noise(self._secret_key(), part.kind, part.grid_scale * Fraction(FACTOR),/'
)
# Every Gaussian draw goes through the mechanism's NoiseStream.integers: the
# walks' (per permutation, on any worker), the label score, the federated
# rounds and the private fit of the public model (tests/test_public_model.py;
# a network's: tests/test_public_model_network.py);
# the Laplace draw serves LayeredShapleyValuator.
for factor in $factors; do
  for site in gaussian laplace; do
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
       tests/test_public_model_network.py \
       ${AUDIT_FILES:-tests/test_audit.py tests/test_audit_paths.py tests/test_audit_joint.py} \
       -k "calibrated_scale or passes_at_the_claimed or claimed_laplace or passes_at_the_true_noise" 2>&1)
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
