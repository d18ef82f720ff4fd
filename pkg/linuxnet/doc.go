// Package linuxnet reads what Linux networking tools print inside a pod (ip -o addr,
// /proc/net/route, iptables-save, /etc/resolv.conf, an OpenVPN configuration). It is pure:
// the text comes from an exec, so every parser is tested with recorded output and never
// panics on what it does not understand.
package linuxnet
