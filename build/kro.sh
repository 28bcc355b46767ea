#!/usr/bin/env bash
# Builds kro's controller from the module pinned in build/kro into bin/kro, for
# `make bench-peers` only (nothing else needs it). Idempotent, like cluster-bins.sh:
# rebuilt only when the stamp beside the binary does not match the pinned go.sum and
# the Go version. Prints the directory of kro's CRDs (the module's helm/crds) and the
# pinned version on stdout, as "CRDS VERSION", for the benchmark's flags.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="${LIMBO_BIN_DIR:-$root/bin}"
mod="$root/build/kro"
module=github.com/kubernetes-sigs/kro
mkdir -p "$bin"

stamp=$( (cat "$mod/go.sum"; echo "$module/cmd/controller"; go env GOVERSION) | sha256sum | cut -c1-16)
if [ -x "$bin/kro" ] && [ "$(cat "$bin/kro.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "kro: bin/kro is up to date" >&2
else
  echo "kro: building $module/cmd/controller (first build takes minutes)" >&2
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -o "$bin/kro" "$module/cmd/controller")
  echo "$stamp" > "$bin/kro.stamp"
fi
(cd "$mod" && go list -m -f '{{.Dir}}/helm/crds {{.Version}}' "$module")
