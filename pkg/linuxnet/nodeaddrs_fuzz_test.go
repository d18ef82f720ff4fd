package linuxnet

import "testing"

// A node's `ip -o addr`, fib_trie, if_inet6 and sysfs come from the node: outside data, read
// through a pod doctor does not control. The seeds are pkg/kube/noderead's recordings of real
// namespaces and NICs.

// nodeRecordings are pkg/kube/noderead's recordings, relative to testdata/.
const nodeRecordings = "../../kube/noderead/testdata/nodenet/*.txt"

func FuzzParseNodeAddrOutput(f *testing.F) {
	addRecorded(f, nodeRecordings)
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseNodeAddrOutput(s)
		if err != nil {
			return
		}
		for _, name := range o.Links {
			if !ValidInterfaceName(name) {
				t.Fatalf("link name %q is none the kernel gives, from %q", name, s)
			}
		}
		for _, i := range o.Interfaces {
			if !ValidInterfaceName(i.Name) || i.Index <= 0 {
				t.Fatalf("interface %+v invalid, from %q", i, s)
			}
			for _, a := range i.Addrs {
				if !a.Prefix.IsValid() {
					t.Fatalf("interface %s has an invalid address, from %q", i.Name, s)
				}
			}
		}
		for _, a := range o.Loose {
			if !a.Is4() {
				t.Fatalf("fib_trie gave %s, not IPv4", a)
			}
		}
	})
}

func FuzzParseSysfsLinks(f *testing.F) {
	addRecorded(f, nodeRecordings)
	f.Fuzz(func(t *testing.T, s string) {
		for name, l := range ParseSysfsLinks(s) {
			if !ValidInterfaceName(name) {
				t.Fatalf("link name %q is none the kernel gives, from %q", name, s)
			}
			if len(l.Speed) > 32 || len(l.Duplex) > 32 || len(l.OperState) > 32 {
				t.Fatalf("unbounded sysfs value in %+v, from %q", l, s)
			}
		}
	})
}
