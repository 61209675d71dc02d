#!/usr/bin/env bash
# Validate the Kubernetes manifests of deploy/k8s against the API schemas (kubernetes-validate,
# strict: unknown fields fail). With kubectl (its built-in kustomize) the kustomization is
# rendered and the result validated, as `kubectl apply -k` would send it; without kubectl each
# manifest file is validated alone (tests/test_deploy.py checks the kustomization's resource list).
set -euo pipefail
cd "$(dirname "$0")/.."
validate=${KUBERNETES_VALIDATE:-.venv/bin/kubernetes-validate}
version=${KUBERNETES_VERSION:-1.33.0}
if command -v kubectl >/dev/null 2>&1; then
  rendered=$(mktemp --suffix=.yaml)
  trap 'rm -f "$rendered"' EXIT
  kubectl kustomize deploy/k8s >"$rendered"
  echo "rendered deploy/k8s with $(kubectl version --client 2>/dev/null | grep -i kustomize || echo kubectl): $(grep -c '^kind:' "$rendered") resources"
  "$validate" --strict --quiet -k "$version" "$rendered"
else
  echo "kubectl not found: validating each manifest file of deploy/k8s without rendering"
  files=()
  for f in deploy/k8s/*.yaml; do [ "$(basename "$f")" = kustomization.yaml ] || files+=("$f"); done
  "$validate" --strict --quiet -k "$version" "${files[@]}"
fi
echo "deploy/k8s: valid for Kubernetes $version"
