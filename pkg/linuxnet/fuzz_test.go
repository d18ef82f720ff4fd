package linuxnet

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// One target per parser: what a pod prints is untrusted, so each parser may skip what it does
// not understand but never panics, and what it returns keeps the promises its callers rely on.
// `make fuzz` finds every target by name; crashers found here go to testdata/fuzz/<target>.

// addRecorded seeds f with the recorded outputs whose names match pattern (testdata/).
func addRecorded(f *testing.F, pattern string) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(files) == 0 {
		f.Fatalf("no recording matches %s: %v", pattern, err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
}

func FuzzParseIPAddr(f *testing.F) {
	addRecorded(f, "ip-addr-*.txt")
	f.Fuzz(func(t *testing.T, s string) {
		seen := map[string]bool{}
		for _, i := range ParseIPAddr(s) {
			if !ValidInterfaceName(i.Name) || seen[i.Name] {
				t.Fatalf("interface name %q invalid or repeated, from %q", i.Name, s)
			}
			seen[i.Name] = true
			if i.Index <= 0 || len(i.Addrs) == 0 {
				t.Fatalf("interface %+v without an index or an address, from %q", i, s)
			}
			for _, a := range i.Addrs {
				if !a.Prefix.IsValid() {
					t.Fatalf("interface %s has an invalid address, from %q", i.Name, s)
				}
			}
			for _, a := range i.IPv4() {
				if !a.Prefix.Addr().Is4() {
					t.Fatalf("IPv4() returned %s", a.Prefix)
				}
			}
		}
	})
}

func FuzzParseProcRoute(f *testing.F) {
	addRecorded(f, "proc-net-route-*.txt")
	f.Fuzz(func(t *testing.T, s string) {
		for _, bigEndian := range []bool{false, true} {
			for _, r := range ParseProcRoute(s, bigEndian) {
				if !ValidInterfaceName(r.Iface) || !r.Dest.Addr().Is4() || r.Dest != r.Dest.Masked() || !r.Gateway.Is4() {
					t.Fatalf("route %+v from %q", r, s)
				}
			}
		}
	})
}

func FuzzParseIPTablesSave(f *testing.F) {
	addRecorded(f, "iptables-save-*.txt")
	pools := []netip.Prefix{netip.MustParsePrefix("10.8.0.0/24"), netip.MustParsePrefix("10.9.0.0/24"), netip.MustParsePrefix("0.0.0.0/0")}
	f.Fuzz(func(t *testing.T, s string) {
		nat := ParseIPTablesSave(s)
		for _, r := range nat.Rules {
			if r.Chain == "" || r.Target == "" || !strings.HasPrefix(r.Raw, "-A ") {
				t.Fatalf("rule %+v from %q", r, s)
			}
		}
		for _, pool := range pools {
			for _, r := range nat.SourceNATFor(pool) {
				if (r.Target != "MASQUERADE" && r.Target != "SNAT") || r.Conditional || !slices.Contains(nat.Rules, r) {
					t.Fatalf("SourceNATFor(%s) returned %+v from %q", pool, r, s)
				}
			}
		}
	})
}

func FuzzParseResolvConf(f *testing.F) {
	addRecorded(f, "resolv-*.conf")
	f.Fuzz(func(t *testing.T, s string) {
		rc := ParseResolvConf(s)
		for _, a := range rc.Nameservers {
			if !a.IsValid() {
				t.Fatalf("invalid nameserver from %q", s)
			}
		}
		if d := rc.ClusterDomain(); d != "" && !slices.ContainsFunc(rc.Search, func(e string) bool {
			return strings.TrimSuffix(e, ".") == "svc."+d
		}) {
			t.Fatalf("cluster domain %q is not in the search list %q", d, rc.Search)
		}
	})
}

// FuzzOpenVPNConfig reads the text both as a configuration file and as a command line.
func FuzzOpenVPNConfig(f *testing.F) {
	addRecorded(f, "openvpn-*.conf")
	f.Add("openvpn --dev tun0 --ifconfig 10.8.0.1 10.8.0.2 --push \"route 10.96.0.0 255.240.0.0\"")
	f.Add("ifconfig 10.8.0.1 255.255.255.0\nifconfig-pool 10.8.0.100 10.8.0.120\n")
	f.Fuzz(func(t *testing.T, s string) {
		var file, args OpenVPNConfig
		file.ParseOpenVPNConfig(s)
		args.ParseOpenVPNArgs(strings.Fields(s))
		for _, c := range []OpenVPNConfig{file, args} {
			if p := c.ClientPool(); p.IsValid() && p != p.Masked() {
				t.Fatalf("client pool %s is not a network prefix, from %q", p, s)
			}
			for _, p := range slices.Concat(c.PushRoutes, c.Routes) {
				if !p.IsValid() || p != p.Masked() {
					t.Fatalf("route %s is not a network prefix, from %q", p, s)
				}
			}
			for _, a := range c.PushDNS {
				if !a.IsValid() {
					t.Fatalf("invalid pushed DNS server from %q", s)
				}
			}
		}
	})
}

func FuzzParseOpenVPNStatus(f *testing.F) {
	f.Add("OpenVPN CLIENT LIST\nROUTING TABLE\nVirtual Address,Common Name,Real Address,Last Ref\n10.8.0.6,laptop,192.168.1.20:51515,x\nGLOBAL STATS\nEND\n")
	f.Add("HEADER,ROUTING_TABLE,Virtual Address\nROUTING_TABLE,10.8.0.6,laptop\nROUTING_TABLE\t10.8.1.0/24\tdesk\n")
	f.Fuzz(func(t *testing.T, s string) {
		seen := map[netip.Addr]bool{}
		for _, a := range ParseOpenVPNStatus(s) {
			if !a.IsValid() || seen[a] {
				t.Fatalf("client address %s invalid or repeated, from %q", a, s)
			}
			seen[a] = true
		}
	})
}
