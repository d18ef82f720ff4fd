#!/usr/bin/env bash
# The seed's manual check ("Vérifier"), as a person runs it after a change, for every node
# address: the zone name (A), its AAAA (NODATA expected), an outside name through the zone
# DNS's forward, and the proxy reached by --resolve (a 302 to the identity provider expected).
# dig runs with its defaults (5 s per try, 3 tries), as typed by hand; curl is bounded to 10 s
# so that a dead address cannot hang the benchmark.
#
#   manual-check.sh HOST OUTSIDE_NAME ADDRESS...
# Exit status: the number of failed steps (0 = everything answered as expected).
set -u
host=$1 outside=$2
shift 2
failed=0
ipv4='^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$'
for a in "$@"; do
  ans=$(dig @"$a" "$host" +short) && grep -Eq "$ipv4" <<<"$ans" ||
    { echo "$a: no A answer for $host"; failed=$((failed + 1)); }
  aaaa=$(dig @"$a" "$host" AAAA) && grep -q 'status: NOERROR' <<<"$aaaa" ||
    { echo "$a: AAAA for $host is not NOERROR"; failed=$((failed + 1)); }
  out=$(dig @"$a" "$outside" +short) && grep -Eq "$ipv4" <<<"$out" ||
    { echo "$a: no answer for $outside (forward)"; failed=$((failed + 1)); }
  code=$(curl -sk -o /dev/null -w '%{http_code}' --max-time 10 --resolve "$host:443:$a" "https://$host/")
  [ "$code" = 302 ] || { echo "$a: https://$host answered $code, not 302"; failed=$((failed + 1)); }
done
echo "$# addresses, $failed failed steps"
exit "$failed"
