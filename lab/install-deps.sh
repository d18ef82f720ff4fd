#!/usr/bin/env bash
# Installs the Debian packages the lab runs (idempotent: only what is missing is installed).
#   iproute2 (ip, ss), iptables, procps (sysctl), iputils-ping: the namespace network
#   conntrack: the kube-proxy stand-in flushes UDP flows whose endpoint changed
#   openvpn: the VPN pod
#   nftables: masquerade written with nft directly (vpn-trace reads nft -j list ruleset)
#   dnsutils, curl: the checks a person runs by hand (dig, curl --resolve)
#   time: GNU time, the peak memory of each run in `make bench`
# The Go-built binaries (kube-apiserver, etcd, kwok, CoreDNS, Traefik) come from lab/build.sh.
set -euo pipefail
pkgs=(iproute2 iptables nftables procps iputils-ping conntrack openvpn dnsutils curl ca-certificates time)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "[lab-deps] all present: ${pkgs[*]}" >&2
  exit 0
fi
echo "[lab-deps] installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# Package scripts must not start services on the host (the lab starts its own
# OpenVPN inside namespaces); policy-rc.d exit 101 forbids it during this install only.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; created_policy=1
fi
trap '[ "$created_policy" = 1 ] && rm -f "$policy"' EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "[lab-deps] installed: ${missing[*]}" >&2
