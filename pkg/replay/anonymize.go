package replay

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/miekg/dns"
)

// Anonymize returns a copy of b whose names, hosts and addresses are replaced by stand-ins,
// the same input by the same stand-in everywhere in the bundle (API bodies and paths, commands
// and their output, DNS messages, HTTPS heads, flags), so that the replay still finds what it
// looks for and judges the same relations:
//
//   - names: every object's name and namespace the API returned, and the node names, become
//     anonN, unless kept (keptName): system namespaces, the tool's own objects, and the names of
//     the software the checks recognise (traefik, coredns, openvpn, ...), which are not secrets;
//   - hosts: every label of a DNS name under the domains the run asked about (the zone, the
//     probe host, the name outside the zone) but the top-level one becomes anonN, so a name in
//     the zone stays in the zone; cluster-internal names (cluster.local) keep their shape;
//   - addresses: IPv4 and IPv6 addresses, in text and in /proc/net's hexadecimal, are mapped by
//     a keyed prefix-preserving permutation (as Crypto-PAn does): two addresses share a prefix
//     of n bits after the mapping exactly when they did before, so subnets, node addresses
//     and the zone's answers keep their relations. The private ranges stay private (10/8,
//     172.16/12, 192.168/16, 100.64/10, fc00::/7 keep their prefix); other addresses keep their
//     first octet (IPv4) or 16 bits (IPv6); loopback, unspecified, link-local, multicast and
//     netmask-like addresses (255.x) are kept. The key is random per bundle.
func Anonymize(b *Bundle) *Bundle {
	a := newAnonymizer(b)
	cp := *b
	cp.Anonymized = true
	cp.Cluster = Cluster{Context: "anonymized", Server: a.text(b.Cluster.Server), Namespace: a.text(b.Cluster.Namespace)}
	cp.Flags = make([]Flag, len(b.Flags))
	for i, f := range b.Flags {
		cp.Flags[i] = Flag{Name: f.Name, Value: a.text(f.Value)}
	}
	cp.Incomplete = a.texts(b.Incomplete)
	cp.API = make([]API, len(b.API))
	for i, x := range b.API {
		x.Path = a.text(x.Path)
		x.ReqBody = a.raw(x.ReqBody)
		x.Body = a.raw(x.Body)
		x.Text = a.text(x.Text)
		x.Warnings = a.texts(x.Warnings)
		x.Error = a.failure(x.Error)
		cp.API[i] = x
	}
	cp.Execs = make([]Exec, len(b.Execs))
	for i, x := range b.Execs {
		x.Namespace, x.Pod, x.Container = a.text(x.Namespace), a.text(x.Pod), a.text(x.Container)
		x.Command = a.texts(x.Command)
		x.Stdin, x.Stdout, x.Stderr = a.output(x.Stdin), a.output(x.Stdout), a.output(x.Stderr)
		x.Error = a.failure(x.Error)
		cp.Execs[i] = x
	}
	cp.DNS = make([]DNS, len(b.DNS))
	for i, x := range b.DNS {
		x.Server, x.Name = a.text(x.Server), a.text(x.Name)
		x.Reply = a.wire(x.Reply)
		x.Error = a.failure(x.Error)
		cp.DNS[i] = x
	}
	// Certificates carry names: each is re-issued as a stand-in, and the replies name the
	// stand-ins' fingerprints (an original's would find it in a certificate log).
	certs, cns := a.certificates(b.Certificates)
	cp.Certificates = certs
	pairs := make([]string, 0, 2*len(cns))
	for from, to := range cns {
		if len(from) >= 4 && from != to {
			pairs = append(pairs, from, to)
		}
	}
	newCNs := strings.NewReplacer(pairs...)
	cp.HTTPS = make([]HTTPS, len(b.HTTPS))
	for i, x := range b.HTTPS {
		x.Addr, x.Host, x.Path = a.text(x.Addr), a.text(x.Host), a.text(x.Path)
		x.Reply = a.raw(json.RawMessage(newCNs.Replace(string(x.Reply))))
		x.Error = a.failure(x.Error)
		switch {
		case certs == nil:
			x.Chain = nil
		case len(x.Chain) > 0 && len(x.Reply) > 0:
			x.Reply = a.standInTLS(x.Reply, certs, x.Chain, x.Host, newCNs, b.Recorded)
		}
		cp.HTTPS[i] = x
	}
	cp.Lookups = make([]Lookup, len(b.Lookups))
	for i, x := range b.Lookups {
		x.Host = a.text(x.Host)
		x.Addrs = a.texts(x.Addrs)
		x.Error = a.failure(x.Error)
		cp.Lookups[i] = x
	}
	cp.Commands = make([]Command, len(b.Commands))
	for i, x := range b.Commands {
		x.Command, x.Stdout, x.Error = a.texts(x.Command), a.output(x.Stdout), a.failure(x.Error)
		cp.Commands[i] = x
	}
	cp.Files = make([]FileRead, len(b.Files))
	for i, x := range b.Files {
		x.Data, x.Error = a.output(x.Data), a.failure(x.Error)
		cp.Files[i] = x
	}
	cp.Calls = make([]Call, len(b.Calls))
	for i, x := range b.Calls {
		x.Args, x.Result, x.Error = a.jsonStrings(x.Args), a.jsonStrings(x.Result), a.failure(x.Error)
		cp.Calls[i] = x
	}
	return &cp
}

type anonymizer struct {
	key []byte
	// names maps an object's name to its stand-in, wherever it appears; labels maps the labels
	// of DNS names under domains, replaced inside those names only. A word in both gets one
	// stand-in.
	names  map[string]string
	labels map[string]string
	// domains are the registered domains (the last two labels) under which every label is
	// replaced.
	domains map[string]bool
	addrs   map[netip.Addr]netip.Addr
}

// keptNames are names the checks recognise or that name nothing of the user's.
var keptNames = map[string]bool{
	"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true, "kubernetes": true,
	"kube-dns": true, "coredns": true, "kube-proxy": true, "traefik": true, "openvpn": true, "nginx": true,
	"ingress-nginx": true, "haproxy": true, "envoy": true, "contour": true, "istio": true, "cilium": true,
	"calico": true, "calico-node": true, "flannel": true, "kube-flannel": true, "kyverno": true, "gatekeeper": true,
	"metallb": true, "busybox": true, "local-path-provisioner": true, "kube-root-ca.crt": true,
	"extension-apiserver-authentication": true, "cluster-info": true, "local": true, "svc": true, "cluster": true,
}

func keptName(n string) bool {
	return len(n) < 3 || keptNames[n] || strings.Contains(n, "lanaccess") || strings.HasPrefix(n, "system") ||
		strings.HasPrefix(n, "kube-") || strings.HasPrefix(n, "anon")
}

func newAnonymizer(b *Bundle) *anonymizer {
	a := &anonymizer{key: make([]byte, 32), names: map[string]string{}, labels: map[string]string{}, domains: map[string]bool{}, addrs: map[netip.Addr]netip.Addr{}}
	_, _ = rand.Read(a.key)
	found := map[string]bool{}
	// reserved are the words a name must not take over: JSON field names, and the API's own
	// path words (groups, versions, resources).
	reserved := map[string]bool{}
	for _, x := range b.API {
		collectNames(x.Body, found, reserved)
		collectNames(x.ReqBody, found, reserved)
		apiWords(x.Path, reserved)
	}
	for _, x := range b.DNS {
		a.addDomain(x.Name)
	}
	for _, x := range b.HTTPS {
		a.addDomain(x.Host)
	}
	for _, x := range b.Lookups {
		a.addDomain(x.Host)
	}
	a.certDomains(b.Certificates)
	labels := a.domainLabels(b)
	standIn := map[string]string{}
	var all []string
	for n := range found {
		if !keptName(n) && !reserved[n] {
			all = append(all, n)
		}
	}
	for l := range labels {
		if !found[l] {
			all = append(all, l)
		}
	}
	sort.Strings(all)
	for i, n := range all {
		standIn[n] = fmt.Sprintf("anon%d", i+1)
	}
	for n := range found {
		if r, ok := standIn[n]; ok {
			a.names[n] = r
		}
	}
	for l := range labels {
		if r, ok := standIn[l]; ok {
			a.labels[l] = r
		}
	}
	return a
}

// domainLabels are the labels (but the top-level one) of the DNS names under the run's domains,
// found anywhere in b; the random probe labels are kept (replay keys recognise them).
func (a *anonymizer) domainLabels(b *Bundle) map[string]bool {
	labels := map[string]bool{}
	for _, s := range a.allText(b) {
		for _, tok := range domainToken().FindAllString(s, -1) {
			if !a.underDomain(tok) {
				continue
			}
			parts := strings.Split(strings.ToLower(strings.TrimSuffix(tok, ".")), ".")
			for _, l := range parts[:len(parts)-1] {
				if !strings.HasPrefix(l, "lanaccess-") {
					labels[l] = true
				}
			}
		}
	}
	return labels
}

// apiWords adds the words of an API path that are not names: /api/VERSION or
// /apis/GROUP/VERSION, then [namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]].
func apiWords(path string, words map[string]bool) {
	p, _, _ := strings.Cut(path, "?")
	segs := strings.Split(strings.Trim(p, "/"), "/")
	if len(segs) == 0 {
		return
	}
	words[segs[0]] = true
	switch {
	case segs[0] == "apis" && len(segs) >= 3:
		for l := range strings.SplitSeq(segs[1], ".") {
			words[l] = true
		}
		words[segs[2]] = true
		segs = segs[3:]
	case segs[0] == "api" && len(segs) >= 2:
		words[segs[1]] = true
		segs = segs[2:]
	default:
		for _, s := range segs {
			words[s] = true
		}
		return
	}
	if len(segs) >= 1 && segs[0] == "namespaces" {
		words["namespaces"] = true
		if len(segs) <= 2 {
			return
		}
		segs = segs[2:]
	}
	if len(segs) >= 1 {
		words[segs[0]] = true
	}
	if len(segs) >= 3 {
		words[segs[2]] = true
	}
}

// collectNames gathers metadata.name and metadata.namespace of every object in a JSON body,
// and every key (a name equal to a field name is not replaced: it would rename the field).
func collectNames(raw json.RawMessage, found, keys map[string]bool) {
	if len(raw) == 0 {
		return
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return
	}
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, child := range t {
				keys[k] = true
				walk(child)
			}
			if meta, ok := t["metadata"].(map[string]any); ok {
				metaNames(meta, found)
			}
		case []any:
			for _, c := range t {
				walk(c)
			}
		}
	}
	walk(v)
}

// generatedHash is the suffix a controller adds to its owner's name (a ReplicaSet's
// pod-template hash, a pod's random suffix).
var generatedHash = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-[a-z0-9]{5,10}$`) })

// metaNames adds an object's name and namespace, its owners' names, and the names its
// generated name was made from (lan-dns-5df7c965cf-: the ReplicaSet lan-dns-5df7c965cf of the
// Deployment lan-dns), which labels and selectors carry even when that owner was not read.
func metaNames(meta map[string]any, found map[string]bool) {
	for _, f := range []string{"name", "namespace"} {
		if s, ok := meta[f].(string); ok && s != "" {
			found[s] = true
		}
	}
	if owners, ok := meta["ownerReferences"].([]any); ok {
		for _, o := range owners {
			if m, ok := o.(map[string]any); ok {
				if s, ok := m["name"].(string); ok && s != "" {
					found[s] = true
				}
			}
		}
	}
	if g, ok := meta["generateName"].(string); ok {
		for base := strings.TrimSuffix(g, "-"); base != "" && len(base) >= 3; base = generatedHash().ReplaceAllString(base, "") {
			found[base] = true
			if !generatedHash().MatchString(base) {
				break
			}
		}
	}
}

var domainToken = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b([a-z0-9_]([a-z0-9_-]*[a-z0-9_])?\.)+[a-z]{2,63}\b\.?`)
})

// addDomain notes the registered domain of a DNS name the run asked about.
func (a *anonymizer) addDomain(name string) {
	labels := strings.Split(strings.ToLower(strings.TrimSuffix(name, ".")), ".")
	if len(labels) < 2 {
		return
	}
	d := strings.Join(labels[len(labels)-2:], ".")
	switch d {
	case "cluster.local", "in-addr.arpa", "ip6.arpa":
		return
	}
	a.domains[d] = true
}

func (a *anonymizer) underDomain(tok string) bool {
	t := strings.ToLower(strings.TrimSuffix(tok, "."))
	for d := range a.domains {
		if t == d || strings.HasSuffix(t, "."+d) {
			return true
		}
	}
	return false
}

func (a *anonymizer) allText(b *Bundle) []string {
	var out []string
	for _, x := range b.API {
		out = append(out, string(x.Body), string(x.ReqBody), x.Text)
	}
	for _, x := range b.Execs {
		out = append(out, x.Stdout, x.Stderr, strings.Join(x.Command, " "))
	}
	for _, x := range b.DNS {
		out = append(out, x.Name)
		if m := new(dns.Msg); m.Unpack(x.Reply) == nil {
			out = append(out, m.String())
		}
	}
	for _, x := range b.HTTPS {
		out = append(out, x.Host, string(x.Reply))
	}
	for _, x := range b.Lookups {
		out = append(out, x.Host)
	}
	for _, f := range b.Flags {
		out = append(out, f.Value)
	}
	for _, x := range b.Calls {
		out = append(out, string(x.Args), string(x.Result))
	}
	return out
}

var (
	ipv4Text = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})(/\d{1,2})?\b`)
	})
	ipv6Text = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)[0-9a-f]{0,4}(:[0-9a-f]{0,4}){2,7}(/\d{1,3})?`) })
	// procHex4 and procHex6 are /proc/net/{tcp,udp}{,6}'s addresses: host-order hexadecimal.
	procHex4 = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b([0-9A-F]{8}):([0-9A-F]{4})\b`) })
	procHex6 = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b([0-9A-F]{32}):([0-9A-F]{4})\b`) })
	// ifInet6 is /proc/net/if_inet6's address: network-order hexadecimal at a line's start.
	ifInet6 = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^[0-9a-f]{32}\b`) })
	// procRoute is a line of /proc/net/route: the interface, then the destination and the
	// gateway in host-order hexadecimal, then flags, refcount, use, metric and the mask.
	procRoute = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?m)^[^\t\n]+\t[0-9A-F]{8}\t[0-9A-F]{8}\t[0-9A-F]{4}\t\d+\t\d+\t\d+\t[0-9A-F]{8}\b`)
	})
	nameTok = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[a-z0-9]([a-z0-9_-]*[a-z0-9])?`) })
)

// text replaces addresses, then hosts and names, in s.
func (a *anonymizer) text(s string) string {
	if s == "" {
		return s
	}
	s = ipv4Text().ReplaceAllStringFunc(s, a.ipText)
	s = ipv6Text().ReplaceAllStringFunc(s, a.ipText)
	s = domainToken().ReplaceAllStringFunc(s, func(tok string) string {
		if !a.underDomain(tok) {
			return tok
		}
		parts := strings.Split(tok, ".")
		for i, l := range parts {
			if r, ok := a.labels[strings.ToLower(l)]; ok {
				parts[i] = r
			}
		}
		return strings.Join(parts, ".")
	})
	return nameTok().ReplaceAllStringFunc(s, func(tok string) string {
		if m := helperSeq().FindStringSubmatchIndex(tok); m != nil && m[0] == 0 {
			// A helper pod, named after its node: lanaccess-<run>-<n>-<node>.
			rest := tok[m[1]:]
			if r, ok := a.names[rest]; ok {
				return tok[:m[1]] + r
			}
			return tok
		}
		if r, ok := a.names[tok]; ok {
			return r
		}
		// Two names joined (Traefik's <namespace>-<name>@kubernetescrd), or a generated name (a
		// ReplicaSet's, a pod's): an owner's name and a suffix.
		for i := strings.IndexByte(tok, '-'); i > 0; i = nextDash(tok, i) {
			if r, ok := a.names[tok[i+1:]]; ok {
				left := tok[:i]
				if l, ok := a.names[left]; ok {
					left = l
				}
				return left + "-" + r
			}
		}
		for i := strings.LastIndexByte(tok, '-'); i >= 3; i = strings.LastIndexByte(tok[:i], '-') {
			if r, ok := a.names[tok[:i]]; ok {
				return r + tok[i:]
			}
		}
		return tok
	})
}

func (a *anonymizer) texts(in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = a.text(s)
	}
	return out
}

// output is text that may also carry /proc/net's hexadecimal addresses.
func (a *anonymizer) output(s string) string {
	s = procRoute().ReplaceAllStringFunc(s, a.routeLine)
	s = procHex4().ReplaceAllStringFunc(s, func(m string) string {
		raw, err := hex.DecodeString(m[:8])
		if err != nil {
			return m
		}
		v := binary.LittleEndian.Uint32(raw)
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], v)
		mapped := a.addr(netip.AddrFrom4(b)).As4()
		binary.LittleEndian.PutUint32(raw, binary.BigEndian.Uint32(mapped[:]))
		return strings.ToUpper(hex.EncodeToString(raw)) + m[8:]
	})
	s = procHex6().ReplaceAllStringFunc(s, func(m string) string {
		raw, err := hex.DecodeString(m[:32])
		if err != nil {
			return m
		}
		var b [16]byte
		for w := range 4 {
			binary.BigEndian.PutUint32(b[4*w:], binary.LittleEndian.Uint32(raw[4*w:]))
		}
		mapped := a.addr(netip.AddrFrom16(b)).As16()
		for w := range 4 {
			binary.LittleEndian.PutUint32(raw[4*w:], binary.BigEndian.Uint32(mapped[4*w:]))
		}
		return strings.ToUpper(hex.EncodeToString(raw)) + m[32:]
	})
	s = ifInet6().ReplaceAllStringFunc(s, func(m string) string {
		raw, err := hex.DecodeString(m)
		if err != nil {
			return m
		}
		ip, _ := netip.AddrFromSlice(raw)
		mapped := a.addr(ip).As16()
		return hex.EncodeToString(mapped[:])
	})
	return a.text(s)
}

// routeLine maps the destination (as a network: the mapped address under the line's mask) and
// the gateway of a /proc/net/route line, written in this machine's byte order (little-endian
// on the machines that record; a big-endian one keeps its order, the map is then on the
// swapped words, which stays consistent within the bundle).
func (a *anonymizer) routeLine(line string) string {
	f := strings.Split(line, "\t")
	mask, err := hex.DecodeString(f[7])
	if err != nil {
		return line
	}
	m := binary.LittleEndian.Uint32(mask)
	for _, i := range []int{1, 2} {
		raw, err := hex.DecodeString(f[i])
		if err != nil || f[i] == "00000000" {
			continue
		}
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], binary.LittleEndian.Uint32(raw))
		mapped := a.addr(netip.AddrFrom4(b)).As4()
		v := binary.BigEndian.Uint32(mapped[:])
		if i == 1 {
			v &= m
		}
		binary.LittleEndian.PutUint32(raw, v)
		f[i] = strings.ToUpper(hex.EncodeToString(raw))
	}
	return strings.Join(f, "\t")
}

// jsonStrings anonymizes every string of a JSON document as command output (a call's
// arguments and answer: addresses, names, a routing table).
func (a *anonymizer) jsonStrings(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return r
	}
	var v any
	if json.Unmarshal(r, &v) != nil {
		return json.RawMessage(`"` + Redacted + `: not valid JSON"`)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case string:
			return a.output(t)
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		case map[string]any:
			for k, x := range t {
				t[k] = walk(x)
			}
		}
		return v
	}
	out, err := json.Marshal(walk(v))
	if err != nil {
		return json.RawMessage(`"` + Redacted + `: not valid JSON"`)
	}
	return out
}

// raw anonymizes a JSON document's text; the result stays valid JSON (names and addresses
// map to names and addresses) or the original is dropped for a note.
func (a *anonymizer) raw(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return r
	}
	out := []byte(a.text(string(r)))
	if !json.Valid(out) {
		return json.RawMessage(`"` + Redacted + `: not valid JSON once anonymized"`)
	}
	return out
}

func (a *anonymizer) failure(f *Failure) *Failure {
	if f == nil {
		return nil
	}
	cp := *f
	cp.Message, cp.Target, cp.What, cp.Stderr, cp.Tool = a.text(f.Message), a.text(f.Target), a.text(f.What), a.text(f.Stderr), a.text(f.Tool)
	return &cp
}

// wire anonymizes a DNS message record by record (its text form, parsed back).
func (a *anonymizer) wire(raw []byte) []byte {
	if len(raw) == 0 {
		return raw
	}
	m := new(dns.Msg)
	if m.Unpack(raw) != nil {
		return nil
	}
	for i := range m.Question {
		m.Question[i].Name = a.text(m.Question[i].Name)
	}
	for _, sec := range []*[]dns.RR{&m.Answer, &m.Ns, &m.Extra} {
		kept := (*sec)[:0]
		for _, rr := range *sec {
			if rr.Header().Rrtype == dns.TypeOPT {
				kept = append(kept, rr)
				continue
			}
			if nrr, err := dns.NewRR(a.text(rr.String())); err == nil && nrr != nil {
				kept = append(kept, nrr)
			}
		}
		*sec = kept
	}
	out, err := m.Pack()
	if err != nil {
		return nil
	}
	return out
}

// ipText maps an address (with an optional prefix length) written as text.
func (a *anonymizer) ipText(m string) string {
	addrPart, bits, hasBits := strings.Cut(m, "/")
	ip, err := netip.ParseAddr(addrPart)
	if err != nil {
		return m
	}
	mapped := a.addr(ip)
	if !hasBits {
		return mapped.String()
	}
	var n int
	if _, err := fmt.Sscanf(bits, "%d", &n); err == nil {
		if p := netip.PrefixFrom(ip, n); p.IsValid() && p.Masked().Addr() == ip {
			// A network written as its first address stays one.
			if mp := netip.PrefixFrom(mapped, n); mp.IsValid() {
				return mp.Masked().String()
			}
		}
	}
	return mapped.String() + "/" + bits
}

// addr is the prefix-preserving permutation: bit i of the result is bit i of ip XOR a keyed
// function of ip's first i bits; the first keep bits are left as they are.
func (a *anonymizer) addr(ip netip.Addr) netip.Addr {
	if r, ok := a.addrs[ip]; ok {
		return r
	}
	keep := keepBits(ip)
	if keep < 0 {
		return ip
	}
	in := ip.AsSlice()
	out := bytes.Clone(in)
	nbits := len(in) * 8
	for i := keep; i < nbits; i++ {
		mac := hmac.New(sha256.New, a.key)
		prefix := make([]byte, len(in))
		for j := range i {
			if in[j/8]&(0x80>>(j%8)) != 0 {
				prefix[j/8] |= 0x80 >> (j % 8)
			}
		}
		mac.Write([]byte{byte(i & 0xff)}) // i < 128
		mac.Write(prefix)
		if mac.Sum(nil)[0]&1 == 1 {
			out[i/8] ^= 0x80 >> (i % 8)
		}
	}
	r, _ := netip.AddrFromSlice(out)
	if ip.Is4() {
		r = r.Unmap()
	}
	a.addrs[ip] = r
	return r
}

// keepBits is how many leading bits an address keeps; -1 keeps it whole.
func keepBits(ip netip.Addr) int {
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsUnspecified() || ip.IsLinkLocalUnicast() || ip.IsMulticast() || ip.IsLinkLocalMulticast() {
		return -1
	}
	if ip.Is4() {
		b := ip.As4()
		switch {
		case b[0] == 255:
			return -1
		case b[0] == 10:
			return 8
		case b[0] == 172 && b[1]&0xf0 == 16:
			return 12
		case b[0] == 192 && b[1] == 168:
			return 16
		case b[0] == 100 && b[1]&0xc0 == 64:
			return 10
		}
		return 8
	}
	if ip.As16()[0]&0xfe == 0xfc {
		return 8
	}
	return 16
}

// nextDash is the index of the next '-' after i, or -1.
func nextDash(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '-')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}
