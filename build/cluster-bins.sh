#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager and kubectl from the module pinned in
# build/cluster into bin/. Idempotent: a binary is rebuilt only when the stamp beside
# it does not match the pinned go.sum, package and flags (so bumping a version rebuilds, and a
# second run does nothing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="${LIMBO_BIN_DIR:-$root/bin}"
mod="$root/build/cluster"
mkdir -p "$bin"


k8s_version=v1.36.3
etcd_version=v3.6.16
k8s_ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=${k8s_version} \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=36 \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z \
 -X k8s.io/client-go/pkg/version.gitVersion=${k8s_version} \
 -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=36"
etcd_ldflags="-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=${etcd_version}"

build() { # name package ldflags
  local name=$1 pkg=$2 ldflags=$3
  # The stamp covers everything that decides the binary: pinned sums, package, flags.
  local stamp
  stamp=$( (cat "$mod/go.sum"; echo "$pkg $ldflags"; go env GOVERSION) | sha256sum | cut -c1-16)
  if [ -x "$bin/$name" ] && [ "$(cat "$bin/$name.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "cluster-bins: $name is up to date"
    return
  fi
  echo "cluster-bins: building $name (first build takes minutes; later ones reuse the Go build cache)"
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin/$name" "$pkg")
  echo "$stamp" > "$bin/$name.stamp"
}

build etcd go.etcd.io/etcd/server/v3 "$etcd_ldflags"
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$k8s_ldflags"
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$k8s_ldflags"
build kubectl k8s.io/kubernetes/cmd/kubectl "$k8s_ldflags"
