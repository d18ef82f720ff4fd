package linuxnet

import "strings"

// ifNameSize is the kernel's IFNAMSIZ: a name holds at most 15 bytes and its NUL.
const ifNameSize = 16

// ValidInterfaceName reports whether the kernel could have given a link this name: the rules of
// dev_valid_name in Linux net/core/dev.c (not empty, shorter than IFNAMSIZ, not "." or "..",
// no '/', ':' or white space). Checked against this machine's kernel with `ip link add NAME
// type veth` in a private namespace: "a:b", "a/b", ".", "..", "" and a 16-byte name are
// refused; "@x", "a@b", "eth0+", "-x" and "a$b;" are accepted, so a valid name is still not
// safe to paste into a shell unquoted.
func ValidInterfaceName(name string) bool {
	if name == "" || len(name) >= ifNameSize || name == "." || name == ".." {
		return false
	}
	// isspace in the C locale: space, \t, \n, \v, \f, \r.
	return !strings.ContainsAny(name, "/: \t\n\v\f\r")
}
