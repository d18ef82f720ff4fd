// Package valid checks values for their kind before they go into a printed command, a YAML
// document or a probe: DNS host names, network interface names. Values come from flags, from
// cluster objects other people write, and from exec output; each is checked for what it
// claims to be, then quoted where it is printed.
package valid

import (
	"fmt"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// Hostname checks a DNS host name (RFC 1123 letters, digits and hyphens per label, plus the
// underscore service labels use), at most 253 bytes, labels of at most 63, a trailing dot
// allowed. A wildcard label is not a host name.
func Hostname(name string) error {
	n := strings.TrimSuffix(name, ".")
	if n == "" || len(n) > 253 {
		return fmt.Errorf("%q is not a DNS host name (empty or longer than 253)", name)
	}
	for label := range strings.SplitSeq(n, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("%q is not a DNS host name (label %q)", name, label)
		}
		for i := range len(label) {
			c := label[i]
			if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-' && c != '_' {
				return fmt.Errorf("%q is not a DNS host name (character %q)", name, c)
			}
		}
	}
	return nil
}

// InterfaceName checks a Linux network interface name as the kernel does (net/core/dev.c
// dev_valid_name, the one reading: linuxnet.ValidInterfaceName, which the exec-output parsers
// use too).
func InterfaceName(name string) error {
	if !linuxnet.ValidInterfaceName(name) || strings.ContainsRune(name, 0) {
		return fmt.Errorf("%q is not a network interface name", name)
	}
	return nil
}
