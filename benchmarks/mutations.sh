#!/usr/bin/env bash
# The mutation table: halve the noise in the source at each draw site, one
# site at a time, in a copy of the package, and run the audits that must pass
# at the claimed noise. Each site must make at least one of them fail.
#
#     bash benchmarks/mutations.sh
set -u
status=0
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python}
declare -A edits=(
  [walk]='skdpval/_walk.py|s/ self.noise_std, noise_out\[i\])$/ 0.5 * self.noise_std, noise_out[i])/'
  [federated]='skdpval/_federated.py|s/gaussian_noise(secret, noise_std,/gaussian_noise(secret, 0.5 * noise_std,/'
  [label_score]='skdpval/_label_quality.py|s/gaussian_noise(generator, noise_std,/gaussian_noise(generator, 0.5 * noise_std,/'
  [laplace]='skdpval/_layered.py|s/)), scale, /)), 0.5 * scale, /'
)
for site in walk federated label_score laplace; do
  file=${edits[$site]%%|*}
  script=${edits[$site]#*|}
  copy=$(mktemp -d)
  cp -r "$root/skdpval" "$root/tests" "$root/pyproject.toml" "$copy/"
  sed -i "$script" "$copy/$file"
  changed=$(diff "$root/$file" "$copy/$file" | grep -c '^>')
  echo "=== noise x0.5 at the $site draw site ($file, $changed line changed)"
  if [ "$changed" -ne 1 ]; then
    echo "ERROR: the edit must change exactly one line: update its pattern"
    status=1
    rm -rf "$copy"
    continue
  fi
  (cd "$copy" && PYTHONPATH="$copy" "$python" -m pytest -p no:cacheprovider -o addopts="" \
     -q -rf ${AUDIT_FILES:-tests/test_audit.py tests/test_audit_paths.py} \
     -k "passes_at_the_claimed or claimed_laplace" 2>&1 \
     | grep -E "^FAILED|passed|failed" | sed "s/ - .*//")
  rm -rf "$copy"
done
exit $status
