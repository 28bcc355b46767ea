#!/usr/bin/env bash
# Builds kubectl-limbo's release archives into DIST (default dist/): one
# kubectl-limbo_<version>_<os>_<arch>.tar.gz per platform of the krew manifest
# (build/krew/limbo.yaml), each holding the plugin and its kubectl completion
# script at the archive's root, as the manifest's `files` name them, and
# checksums.txt with their sha256. The archives are reproducible: the same
# sources and Go give the same bytes.
#
# Usage: build/dist.sh VERSION [DIST]
set -euo pipefail

version=${1:?usage: build/dist.sh VERSION [DIST]}
dist=${2:-dist}
go=${GO:-go}
platforms=${DIST_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64}

cd "$(dirname "$0")/.."
rm -rf "$dist"
mkdir -p "$dist"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

for platform in $platforms; do
	os=${platform%/*}
	arch=${platform#*/}
	dir="$stage/$os-$arch"
	mkdir -p "$dir"
	if [[ $os == windows ]]; then
		bin=kubectl-limbo.exe
		# kubectl finds kubectl_complete-limbo through PATHEXT on Windows: a
		# batch file, which the POSIX script could not be.
		complete=kubectl_complete-limbo.bat
		printf '@kubectl-limbo.exe __complete %%*\r\n' >"$dir/$complete"
	else
		bin=kubectl-limbo
		complete=kubectl_complete-limbo
		install -m 0755 cmd/kubectl-limbo/kubectl_complete-limbo "$dir/$complete"
	fi
	echo "dist: $os/$arch"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$go" build -trimpath -ldflags=-buildid= -o "$dir/$bin" ./cmd/kubectl-limbo
	tar --create --gzip --file "$dist/kubectl-limbo_${version}_${os}_${arch}.tar.gz" \
		--directory "$dir" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
		"$bin" "$complete"
done
(cd "$dist" && sha256sum -- *.tar.gz >checksums.txt)
echo "dist: $(ls "$dist"/*.tar.gz | wc -l) archives in $dist"
