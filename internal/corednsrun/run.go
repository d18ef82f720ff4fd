package corednsrun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/internal/syncbuf"
)

// Bounds: a run never waits longer than these.
const (
	startTimeout = 12 * time.Second // the kubernetes plugin waits up to 5 s for an API that never answers
	queryTimeout = 3 * time.Second
)

// Version is the CoreDNS the lab builds (lab/versions.env COREDNS_VERSION), the binary
// CoreDNSBinary returns: what the differential tests judge as.
const Version = "v1.14.7"

// CoreDNSBinary is the CoreDNS the lab builds (lab/build.sh): $CORPUS_COREDNS, else
// ~/.cache/kubectl-lanaccess/lab/coredns-v1.14.7/coredns, whose directory holds .complete.
func CoreDNSBinary() (string, error) {
	if p := os.Getenv("CORPUS_COREDNS"); p != "" {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(home, ".cache", "kubectl-lanaccess", "lab", "coredns-"+Version)
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		return "", fmt.Errorf("the lab's CoreDNS is not built (%v): run lab/build.sh", err)
	}
	return filepath.Join(dir, "coredns"), nil
}

// Questions are the names a workstation asks about a zone: the apex, a label nobody created,
// the probe host, a name outside, a cluster-internal name; A and AAAA each.
func Questions(zone, probeHost string) []string {
	zone = dns.Fqdn(zone)
	names := []string{zone, "zz-differential-label." + zone}
	if probeHost != "" && dns.Fqdn(probeHost) != zone {
		names = append(names, dns.Fqdn(probeHost))
	}
	return append(names, "example.org.", "kubernetes.default.svc.cluster.local.")
}

// Run is what one CoreDNS process did: whether it started, with which error, and its answers
// per port written in the Corefile (the format of the corpus harness's coredns.yaml).
type Run struct {
	Workload string        `json:"workload"`
	Conf     string        `json:"conf"`
	Starts   bool          `json:"starts"`
	Error    string        `json:"error"`
	Ports    []PortAnswers `json:"ports"`
	// Sources are the probe host's A asked from other source addresses (acl, view), on the
	// run's first port (testdata/corpus/truth_sources_test.go).
	Sources []SourceAnswer `json:"sources"`
}

// SourceAnswer is CoreDNS's answer to one question asked from Source ("10.244.1.1 (why)").
type SourceAnswer struct {
	Source    string   `json:"source"`
	Question  string   `json:"question"`
	Rcode     string   `json:"rcode"`
	Answer    []string `json:"answer"`
	Forwarded bool     `json:"forwarded"`
}

// PortAnswers are the answers on one server port, as written in the Corefile.
type PortAnswers struct {
	Port    string   `json:"port"`
	Answers []Answer `json:"answers"`
}

// Answer is CoreDNS's reply to one question.
type Answer struct {
	Question  string   `json:"question"`
	Transport string   `json:"transport"`
	Rcode     string   `json:"rcode"`
	Flags     []string `json:"flags"`
	Answer    []string `json:"answer"`
	Authority []string `json:"authority"`
	Forwarded bool     `json:"forwarded"`
	Error     string   `json:"error"`
}

// NameType splits "grafana.apps.example.com. A".
func (a Answer) NameType() (string, uint16) {
	name, t, _ := strings.Cut(a.Question, " ")
	return name, dns.StringToType[t]
}

// Records writes rrs as the corpus harness records them: one space between fields, sorted;
// without the TTL when withTTL is false; a SOA serial that is a time (the kubernetes plugin's
// last sync) as 0.
func Records(rrs []dns.RR, withTTL bool) []string {
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		rr = dns.Copy(rr)
		if !withTTL {
			rr.Header().Ttl = 0
		}
		if soa, ok := rr.(*dns.SOA); ok && soa.Serial > 1000000000 {
			soa.Serial = 0 // the kubernetes plugin's serial is the time of its last sync
		}
		s := spaces.ReplaceAllString(rr.String(), " ")
		if !withTTL {
			s = strings.Replace(s, " 0 IN ", " IN ", 1)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

var spaces = regexp.MustCompile(`\s+`)

// RunCoreDNS runs the real binary on a pod's files (laid out under a temporary root, rewritten
// only to run on loopback) and records, as the corpus harness does, whether it starts and its
// answers to A and AAAA of names, per Corefile port, over UDP. It imports nothing of this
// project but internal/syncbuf: the truth it records does not depend on the code it judges.
func RunCoreDNS(ctx context.Context, bin string, mounts []Mount, conf, zone string, names []string) (Run, error) {
	return RunCoreDNSThen(ctx, bin, mounts, conf, zone, names, nil)
}

// Process is a running CoreDNS, for tests that act on it after it started.
type Process struct {
	root string
	rw   *Rewriter
	stub *Stub
}

// Ask sends one question over UDP to the server port written port in the Corefile.
func (p *Process) Ask(port, name string, qtype uint16) Answer {
	return exchange(fmt.Sprintf("127.0.0.1:%d", p.rw.dnsPorts[port]), dns.Fqdn(name), qtype, p.stub)
}

// Write replaces the content of the pod file at path (through the kubelet's symlinks, as a
// ConfigMap update does) and rewrites it for loopback with the ports already in use.
func (p *Process) Write(path, content string) error {
	full := filepath.Join(p.root, path)
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return err
	}
	if err := os.WriteFile(real, []byte(content), 0o600); err != nil {
		return err
	}
	delete(p.rw.seen, real)
	return p.rw.file(path, 0)
}

// RunCoreDNSThen is RunCoreDNS, calling then (when not nil) once CoreDNS answers on every port
// and before the process is stopped.
func RunCoreDNSThen(ctx context.Context, bin string, mounts []Mount, conf, zone string, names []string, then func(*Process)) (Run, error) {
	run := Run{Conf: conf}
	root, err := os.MkdirTemp("", "corefile-differential-")
	if err != nil {
		return run, err
	}
	defer func() { _ = os.RemoveAll(root) }()
	if err := Layout(mounts, root); err != nil {
		return run, err
	}
	stub, err := StartStub(zone)
	if err != nil {
		return run, err
	}
	defer stub.Close()
	var paths []string
	for _, m := range mounts {
		paths = append(paths, m.Path)
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	rw := NewRewriter(root, paths, stub.addr, RewriteOptions{})
	if _, err := os.Lstat(filepath.Join(root, conf)); err == nil {
		if err := rw.file(conf, 0); err != nil {
			return run, fmt.Errorf("rewriting %s for loopback: %w", conf, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-conf", filepath.Join(root, conf)) //nolint:gosec // G204: the lab's own CoreDNS build, on a file this test laid out
	cmd.Dir = root
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out := syncbuf.Buffer{Max: 1 << 20} // bounded: the start-up error is in the first lines
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return run, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		select {
		case err := <-exited:
			_ = err // killed here: its exit status says nothing
		case <-time.After(5 * time.Second):
		}
	}()
	var ports []string
	for p := range rw.dnsPorts {
		ports = append(ports, p)
	}
	sort.Strings(ports)
	if err := WaitStarted(exited, rw.dnsPorts, ports); err != nil {
		run.Error = Normalise(out.String()+err.Error(), root, rw.dnsPorts, rw.httpPorts)
		return run, nil
	}
	run.Starts = true
	for _, p := range ports {
		pa := PortAnswers{Port: p}
		for _, n := range names {
			for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
				pa.Answers = append(pa.Answers, exchange(fmt.Sprintf("127.0.0.1:%d", rw.dnsPorts[p]), n, qt, stub))
			}
		}
		run.Ports = append(run.Ports, pa)
	}
	if then != nil {
		then(&Process{root: root, rw: rw, stub: stub})
	}
	select {
	case err := <-exited:
		run.Starts, run.Error = false, Normalise(out.String()+fmt.Sprint(err), root, rw.dnsPorts, rw.httpPorts)
	default:
	}
	return run, nil
}

// WaitStarted waits until every server port answers, or the process exits. A configuration
// whose server blocks all come from imports has no port the rewriter saw: the process is given
// until the start timeout to fail (a file that imports itself takes CoreDNS about 4 s of
// expansions to give up).
func WaitStarted(exited chan error, dnsPorts map[string]int, ports []string) error {
	if len(ports) == 0 {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("exit: %v", err)
		case <-time.After(startTimeout):
			return nil
		}
	}
	deadline := time.Now().Add(startTimeout)
	pending := append([]string(nil), ports...)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("exit: %v", err)
		default:
		}
		var still []string
		for _, p := range pending {
			cl := &dns.Client{Net: "udp", Timeout: 300 * time.Millisecond}
			m := new(dns.Msg)
			m.SetQuestion("lanaccess-differential-start.invalid.", dns.TypeTXT)
			if _, _, err := cl.Exchange(m, fmt.Sprintf("127.0.0.1:%d", dnsPorts[p])); err != nil {
				still = append(still, p)
			}
		}
		if pending = still; len(pending) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("no answer on port(s) %s within %s", strings.Join(pending, ", "), startTimeout)
}

func exchange(addr, name string, qt uint16, stub *Stub) Answer {
	a := Answer{Question: name + " " + dns.TypeToString[qt], Transport: "udp"}
	before := stub.Count(name, qt)
	m := new(dns.Msg)
	m.SetQuestion(name, qt)
	m.RecursionDesired = true
	cl := &dns.Client{Net: "udp", Timeout: queryTimeout}
	r, _, err := cl.Exchange(m, addr)
	a.Forwarded = stub.Count(name, qt) > before
	if err != nil {
		a.Rcode, a.Error = "no answer", err.Error()
		return a
	}
	a.Rcode = dns.RcodeToString[r.Rcode]
	if r.Authoritative {
		a.Flags = append(a.Flags, "aa")
	}
	a.Answer = Records(r.Answer, true)
	a.Authority = Records(r.Ns, true)
	return a
}

var logStamp = regexp.MustCompile(`^\d{4}[-/]\d{2}[-/]\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?Z? ?`)

// Normalise makes CoreDNS's output independent of the run: the temporary root and the
// loopback ports are written back as the pod's paths and the Corefile's ports (of the servers,
// then of the HTTP listeners), timestamps and maxprocs lines dropped; the last 12 lines kept.
func Normalise(s, root string, dnsPorts, httpPorts map[string]int) string {
	s = strings.ReplaceAll(s, root, "")
	for orig, p := range dnsPorts {
		s = strings.ReplaceAll(s, ":"+strconv.Itoa(p), ":"+orig)
	}
	for orig, p := range httpPorts {
		s = strings.ReplaceAll(s, "127.0.0.1:"+strconv.Itoa(p), ":"+orig)
	}
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		l = strings.TrimSpace(logStamp.ReplaceAllString(l, ""))
		if l != "" && !strings.HasPrefix(l, "maxprocs:") {
			lines = append(lines, l)
		}
	}
	if len(lines) > 12 {
		lines = lines[len(lines)-12:]
	}
	return strings.Join(lines, "\n")
}

// Addresses the stub upstream gives, as the public DNS of the seed would: the zone's names
// point at the VPN address, example.org at a documentation address; anything else NXDOMAIN.
const (
	PublicZoneA    = "100.64.0.10"
	PublicZoneAAAA = "fd7a:115c:a1e0::a"
	OutsideName    = "example.org."
	OutsideA       = "198.51.100.7"
	OutsideAAAA    = "2001:db8::7"
)

// Stub plays the public DNS for forward (see the constants above) on stubUpstreams loopback
// addresses, one port, UDP and TCP; it counts what it is asked.
type Stub struct {
	zone    string
	addr    string
	mu      sync.Mutex
	asked   map[string]int // "name TYPE" -> count
	servers []*dns.Server
}

// StartStub starts the stub upstream for zone.
func StartStub(zone string) (*Stub, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	return StartStubAt(zone, "127.0.0.1:"+strconv.Itoa(port))
}

// StartStubAt starts the stub upstream for zone at addr (host:port, the first of its addresses):
// the address a rewritten Corefile already names, in another network namespace.
func StartStubAt(zone, addr string) (*Stub, error) {
	s := &Stub{zone: dns.Fqdn(zone), asked: map[string]int{}, addr: addr}
	for i := range stubUpstreams {
		for _, netw := range []string{"udp", "tcp"} {
			if err := s.listen(stubAddr(s.addr, i), netw); err != nil {
				s.Close()
				return nil, err
			}
		}
	}
	return s, nil
}

// Addr is the stub's first address, host:port.
func (s *Stub) Addr() string { return s.addr }

func (s *Stub) listen(addr, netw string) error {
	srv := &dns.Server{Addr: addr, Net: netw, Handler: s}
	started := make(chan error, 1)
	srv.NotifyStartedFunc = func() { started <- nil }
	go func() {
		if err := srv.ListenAndServe(); err != nil {
			started <- err
		}
	}()
	select {
	case err := <-started:
		if err != nil {
			return err
		}
	case <-time.After(5 * time.Second):
		return fmt.Errorf("stub upstream did not start on %s/%s", addr, netw)
	}
	s.servers = append(s.servers, srv)
	return nil
}

// Close stops the stub.
func (s *Stub) Close() {
	for _, srv := range s.servers {
		_ = srv.Shutdown()
	}
}

// Count is how many times the stub was asked name (any case) of type qt.
func (s *Stub) Count(name string, qt uint16) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[strings.ToLower(dns.Fqdn(name))+" "+dns.TypeToString[qt]]
}

// ServeDNS answers as the public DNS would; a question it cannot parse gets FORMERR.
func (s *Stub) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = true
	if len(r.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(m)
		return
	}
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	s.mu.Lock()
	s.asked[name+" "+dns.TypeToString[q.Qtype]]++
	s.mu.Unlock()
	rr := func(text string) dns.RR {
		x, err := dns.NewRR(text)
		if err != nil {
			panic(err)
		}
		return x
	}
	inZone := dns.IsSubDomain(s.zone, name)
	switch {
	case inZone && q.Qtype == dns.TypeA:
		m.Answer = append(m.Answer, rr(fmt.Sprintf("%s 300 IN A %s", q.Name, PublicZoneA)))
	case inZone && q.Qtype == dns.TypeAAAA:
		m.Answer = append(m.Answer, rr(fmt.Sprintf("%s 300 IN AAAA %s", q.Name, PublicZoneAAAA)))
	case inZone:
		m.Ns = append(m.Ns, rr(fmt.Sprintf("%s 300 IN SOA ns.%s hostmaster.%s 1 7200 3600 1209600 300", s.zone, s.zone, s.zone)))
	case name == OutsideName && q.Qtype == dns.TypeA:
		m.Answer = append(m.Answer, rr(fmt.Sprintf("%s 300 IN A %s", q.Name, OutsideA)))
	case name == OutsideName && q.Qtype == dns.TypeAAAA:
		m.Answer = append(m.Answer, rr(fmt.Sprintf("%s 300 IN AAAA %s", q.Name, OutsideAAAA)))
	case name == OutsideName:
	default:
		m.Rcode = dns.RcodeNameError
		m.Ns = append(m.Ns, rr(". 300 IN SOA a.root-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400"))
	}
	_ = w.WriteMsg(m)
}
