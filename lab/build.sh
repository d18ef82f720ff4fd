#!/usr/bin/env bash
# Builds the lab's binaries from the Go module proxy into a cache keyed by version:
#   ${XDG_CACHE_HOME:-~/.cache}/kubectl-lanaccess/lab/<component>-<version>/
# A component is rebuilt only when its version changes (or its cache entry is incomplete).
# Prints the cache directory of each component, one "name=dir" line each, on stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
cache=${LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-lanaccess/lab}
mkdir -p "$cache"
export GOFLAGS=-mod=mod CGO_ENABLED=0
log() { printf '[lab-build] %s\n' "$*" >&2; }

# done_or_build NAME DIR FUNC: runs FUNC into a temp dir, then renames it to DIR atomically.
done_or_build() {
  local name=$1 dir=$2 fn=$3
  if [ -f "$dir/.complete" ]; then echo "$name=$dir"; return; fi
  local tmp="$dir.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  local t0=$SECONDS
  log "building $name into $dir (cold builds take minutes)"
  "$fn" "$tmp"
  touch "$tmp/.complete"
  rm -rf "$dir"; mv "$tmp" "$dir"
  log "$name built in $((SECONDS - t0))s"
  echo "$name=$dir"
}

build_kubernetes() {
  local out=$1 work
  work=$(mktemp -d)
  local moddir
  moddir=$(cd "$work" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  {
    echo "module lab.local/kubernetes"
    echo "go 1.25"
    echo "require k8s.io/kubernetes $K8S_VERSION"
    grep -oE '^\s*k8s.io/[a-z0-9-]+ => ./staging/src/k8s.io/[a-z0-9-]+' "$moddir/go.mod" |
      awk -v v="$K8S_STAGING_VERSION" '{print "replace " $1 " => " $1 " " v}'
  } > "$work/go.mod"
  cat > "$work/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  (cd "$work" && go mod tidy -e >/dev/null 2>&1 || true)
  (cd "$work" && GOFLAGS=-mod=mod go mod tidy)
  local v=$K8S_VERSION major minor
  major=${v#v}; major=${major%%.*}; minor=${v#v*.}; minor=${minor%%.*}
  local ld="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ld="$ld -X $pkg.gitCommit=0000000000000000000000000000000000000000 -X $pkg.gitTreeState=clean"
    ld="$ld -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$work" && go build -trimpath -ldflags "$ld" -o "$out/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
  rm -rf "$work"
}

build_etcd() {
  local out=$1 work
  work=$(mktemp -d)
  cat > "$work/go.mod" <<GOMOD
module lab.local/etcd
go 1.25
require go.etcd.io/etcd/server/v3 $ETCD_VERSION
GOMOD
  cat > "$work/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  (cd "$work" && go mod tidy && go build -trimpath -ldflags "-s -w" -o "$out/etcd" .)
  rm -rf "$work"
}

build_kwok() {
  local out=$1 moddir
  GOBIN=$out go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  moddir=$(cd "$(mktemp -d)" && go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  mkdir -p "$out/stages"
  cp -r "$moddir/kustomize/stage/." "$out/stages/"
  chmod -R u+w "$out/stages"
}

build_coredns() {
  local out=$1
  GOBIN=$out go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"
}

# Traefik, the lab's proxy pods (lab/internal/podruntime): cmd/traefik from the module proxy in a
# throwaway module. Traefik's go.mod replaces github.com/traefik/traefik/dynamic/ext with a
# directory of its repository that the module zip lacks (./pkg/config/dynamic/ext); the open-source
# build extends nothing (both types are empty structs there), so the module gives that directory
# itself; its other replaces and excludes are copied. The CRDs the lab applies come from the same
# module (docs/content/reference/dynamic-configuration). The Gateway API's CRDs are a component of
# their own (gateway-api, below).
build_traefik() {
  local out=$1 work moddir
  work=$(mktemp -d)
  moddir=$(cd "$work" && go mod download -json "github.com/traefik/traefik/v3@$TRAEFIK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  mkdir -p "$work/ext"
  printf 'module github.com/traefik/traefik/dynamic/ext\n\ngo 1.26.0\n' > "$work/ext/go.mod"
  cat > "$work/ext/ext.go" <<'GO'
// Package ext is Traefik's dynamic-configuration extension point (empty in its open-source build).
package ext

// HTTP extends dynamic.HTTP.
type HTTP struct{}

// Router extends dynamic.Router.
type Router struct{}
GO
  {
    echo "module lab.local/traefik"
    echo "go 1.26.0"
    echo "require github.com/traefik/traefik/v3 $TRAEFIK_VERSION"
    echo "replace github.com/traefik/traefik/dynamic/ext => ./ext"
    grep -E '^\s*github.com/[^ ]+ => github.com/' "$moddir/go.mod" | sed 's/^\s*/replace /'
    grep -E '^exclude ' "$moddir/go.mod"
  } > "$work/go.mod"
  cat > "$work/tools.go" <<'GO'
//go:build tools

package tools

import _ "github.com/traefik/traefik/v3/cmd/traefik"
GO
  (cd "$work" && go mod tidy)
  (cd "$work" && go build -trimpath -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$TRAEFIK_VERSION" \
    -o "$out/traefik" github.com/traefik/traefik/v3/cmd/traefik)
  mkdir -p "$out/crds"
  cp "$moddir/docs/content/reference/dynamic-configuration/kubernetes-crd-definition-v1.yml" "$out/crds/traefik.yaml"
  chmod -R u+w "$out/crds"
  rm -rf "$work"
}

# The Gateway API's CRDs for Traefik's kubernetesgateway provider: the standard channel
# (config/crd/standard) of sigs.k8s.io/gateway-api at the version Traefik's go.mod requires, from
# the module proxy. The standard channel serves every kind and version the provider watches
# without experimentalChannel (pkg/provider/kubernetes/gateway/client.go WatchAll: GatewayClass,
# Gateway, HTTPRoute, GRPCRoute, TLSRoute, BackendTLSPolicy v1, ReferenceGrant v1beta1); only
# TCPRoute (v1alpha2, experimental) is left out, which Traefik watches with experimentalChannel
# only. The channel's ValidatingAdmissionPolicy (safe upgrades) is not a CRD and is not shipped.
build_gateway_api() {
  local out=$1 work moddir want
  work=$(mktemp -d)
  moddir=$(cd "$work" && go mod download -json "github.com/traefik/traefik/v3@$TRAEFIK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  want=$(awk '$1 == "sigs.k8s.io/gateway-api" {print $2; exit}' "$moddir/go.mod")
  if [ "$want" != "$GATEWAY_API_VERSION" ]; then
    log "Traefik $TRAEFIK_VERSION requires sigs.k8s.io/gateway-api $want, versions.env says $GATEWAY_API_VERSION"
    return 1
  fi
  moddir=$(cd "$work" && go mod download -json "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  mkdir -p "$out/crds"
  cp "$moddir"/config/crd/standard/gateway.networking.k8s.io_*.yaml "$out/crds/"
  rm -f "$out/crds/gateway.networking.k8s.io_vap_safeupgrades.yaml"
  chmod -R u+w "$out/crds"
  rm -rf "$work"
}

# The CNI reference plugins (lab/internal/podruntime, pods on node-vpn): only those the lab's
# conflists chain, built from the module proxy. libcni, which drives them, is linked into the lab
# itself, never into a plugin.
CNI_PLUGINS="main/ptp ipam/host-local main/loopback meta/portmap meta/tuning"
build_cni_plugins() {
  local out=$1 p pkgs=""
  for p in $CNI_PLUGINS; do pkgs="$pkgs github.com/containernetworking/plugins/plugins/$p@$CNI_PLUGINS_VERSION"; done
  # shellcheck disable=SC2086 # one package per word
  GOBIN=$out go install -trimpath -ldflags "-s -w" $pkgs
}

# The NetworkPolicy enforcer (lab/internal/netpol): sigs.k8s.io/kube-network-policies, the one
# kind ships, from the module proxy (its module builds as it is). go install names the binary after
# its package directory (cmd); the cache holds it as kube-network-policies, with the module's own
# install.yaml, whose ServiceAccount, ClusterRole and binding the lab applies (not its DaemonSet).
build_kube_network_policies() {
  local out=$1 moddir
  GOBIN=$out go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kube-network-policies/cmd@$KUBE_NETWORK_POLICIES_VERSION"
  mv "$out/cmd" "$out/kube-network-policies"
  moddir=$(cd "$(mktemp -d)" && go mod download -json "sigs.k8s.io/kube-network-policies@$KUBE_NETWORK_POLICIES_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  cp "$moddir/install.yaml" "$out/install.yaml"
  chmod u+w "$out/install.yaml"
}

# The Linux workstation (lab/internal/workstation): Debian's own systemd-resolved, NetworkManager,
# D-Bus and dnsmasq (the LAN's DHCP server), extracted into root/ from their .deb files, never
# installed (systemd-resolved's postinst would point this machine's /etc/resolv.conf at a stub).
# The cache entry is keyed by the versions apt offers; versions.txt lists "package=version".
WORKSTATION_DEBS="systemd-resolved libsystemd-shared dbus-daemon dbus-bin dbus-system-bus-common
  libdbus-1-3 network-manager libnm0 libndp0 libteamdctl0 libmm-glib0 libjansson4 dnsmasq-base"
workstation_pins() { # "package=version" of each, as apt would download them now
  apt-cache show --no-all-versions $WORKSTATION_DEBS 2>/dev/null |
    awk '/^Package: /{p=$2} /^Version: /{print p "=" $2}'
}
build_workstation() {
  local out=$1 debs f
  debs=$(mktemp -d)
  (cd "$debs" && apt-get download -q -o APT::Sandbox::User=root $WORKSTATION_PINS >&2)
  for f in "$debs"/*.deb; do
    dpkg-deb -x "$f" "$out/root"
    echo "$(dpkg-deb -f "$f" Package)=$(dpkg-deb -f "$f" Version)" >> "$out/versions.txt"
  done
  rm -rf "$debs"
  local lib="$out/root/usr/lib/x86_64-linux-gnu" bin missing
  for bin in lib/systemd/systemd-resolved usr/bin/resolvectl usr/sbin/NetworkManager usr/bin/nmcli usr/bin/dbus-daemon usr/sbin/dnsmasq; do
    missing=$(LD_LIBRARY_PATH="$lib:$lib/systemd" ldd "$out/root/$bin" | grep 'not found' || true)
    [ -z "$missing" ] || { log "$bin needs libraries this machine lacks: $missing"; return 1; }
  done
}
workstation_dir() { # sets WORKSTATION_PINS and WORKSTATION_DIR
  WORKSTATION_PINS=$(workstation_pins)
  if [ "$(echo "$WORKSTATION_PINS" | grep -c =)" != "$(echo $WORKSTATION_DEBS | wc -w)" ]; then
    apt-get update -qq >&2
    WORKSTATION_PINS=$(workstation_pins)
  fi
  local pin key=""
  for pin in $WORKSTATION_PINS; do
    case $pin in systemd-resolved=*|network-manager=*) key="$key-${pin#*=}" ;; esac
  done
  WORKSTATION_DIR="$cache/workstation$key-$(echo "$WORKSTATION_PINS" | sha256sum | cut -c1-8)"
}

only=${1:-all}
[ "$only" = all ] || [ "$only" = etcd ] && done_or_build etcd "$cache/etcd-$ETCD_VERSION" build_etcd
[ "$only" = all ] || [ "$only" = coredns ] && done_or_build coredns "$cache/coredns-$COREDNS_VERSION" build_coredns
[ "$only" = all ] || [ "$only" = kwok ] && done_or_build kwok "$cache/kwok-$KWOK_VERSION" build_kwok
[ "$only" = all ] || [ "$only" = kubernetes ] && done_or_build kubernetes "$cache/kubernetes-$K8S_VERSION" build_kubernetes
[ "$only" = all ] || [ "$only" = traefik ] && done_or_build traefik "$cache/traefik-$TRAEFIK_VERSION" build_traefik
[ "$only" = all ] || [ "$only" = gateway-api ] && done_or_build gateway-api "$cache/gateway-api-$GATEWAY_API_VERSION" build_gateway_api
[ "$only" = all ] || [ "$only" = cni-plugins ] && done_or_build cni-plugins "$cache/cni-plugins-$CNI_PLUGINS_VERSION" build_cni_plugins
[ "$only" = all ] || [ "$only" = kube-network-policies ] && done_or_build kube-network-policies "$cache/kube-network-policies-$KUBE_NETWORK_POLICIES_VERSION" build_kube_network_policies
[ "$only" = workstation ] && workstation_dir && done_or_build workstation "$WORKSTATION_DIR" build_workstation
exit 0
