package kube

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// A node's `ip -o addr`, fib_trie, if_inet6 and sysfs come from the node: outside data, read
// by a pod doctor does not control.

func addNodenetRecordings(f *testing.F) {
	f.Helper()
	files, err := filepath.Glob("testdata/nodenet/*.txt")
	if err != nil || len(files) == 0 {
		f.Fatalf("no recordings in testdata/nodenet: %v", err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
}

func FuzzParseNodeAddrs(f *testing.F) {
	addNodenetRecordings(f)
	f.Fuzz(func(t *testing.T, s string) {
		var n NodeNet
		if err := ParseNodeAddrs(s, &n); err != nil {
			return
		}
		for _, l := range n.Links {
			if !linuxnet.ValidInterfaceName(l.Name) {
				t.Fatalf("link name %q is none the kernel gives, from %q", l.Name, s)
			}
			for _, p := range l.Addrs {
				if !p.IsValid() {
					t.Fatalf("link %s has an invalid address, from %q", l.Name, s)
				}
			}
		}
		for _, a := range n.Loose {
			if !a.Is4() {
				t.Fatalf("fib_trie gave %s, not IPv4", a)
			}
		}
		for _, a := range n.IPVSAddrs() {
			if owner, ok := n.Owns(a); ok && owner == IPVSDevice {
				t.Fatalf("%s is owned through %s", a, IPVSDevice)
			}
		}
	})
}

func FuzzParseLinkStates(f *testing.F) {
	addNodenetRecordings(f)
	f.Fuzz(func(t *testing.T, s string) {
		n := NodeNet{Links: []NodeLink{{Name: "eth0"}, {Name: "lan0"}, {Name: "lo"}}}
		ParseLinkStates(s, &n)
		for _, l := range n.Links {
			st := l.Link
			if len(st.SpeedRaw) > 32 || len(st.DuplexRaw) > 32 || len(st.OperState) > 32 {
				t.Fatalf("unbounded sysfs value in %+v, from %q", st, s)
			}
			if v, ok := st.Speed(); ok && v <= 0 {
				t.Fatalf("speed %d known, from %q", v, s)
			}
			_ = st.Describe()
		}
	})
}
