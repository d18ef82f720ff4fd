package corednsrun

import (
	"bytes"
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
)

// Bounds: a run never waits longer than these.
const (
	startTimeout = 12 * time.Second // the kubernetes plugin waits up to 5 s for an API that never answers
	queryTimeout = 3 * time.Second
)

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
	dir := filepath.Join(home, ".cache", "kubectl-lanaccess", "lab", "coredns-v1.14.7")
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

// Records writes rrs as the corpus harness does: one space between fields, sorted; without the
// TTL when withTTL is false.
func Records(rrs []dns.RR, withTTL bool) []string {
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		rr = dns.Copy(rr)
		if !withTTL {
			rr.Header().Ttl = 0
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
// project: the truth it records does not depend on the code it judges.
func RunCoreDNS(ctx context.Context, bin string, mounts []Mount, conf, zone string, names []string) (Run, error) {
	return RunCoreDNSThen(ctx, bin, mounts, conf, zone, names, nil)
}

// Process is a running CoreDNS, for tests that act on it after it started.
type Process struct {
	root string
	rw   *rewriter
	stub *stubUpstream
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
	stub, err := startStub(zone)
	if err != nil {
		return run, err
	}
	defer stub.close()
	var paths []string
	for _, m := range mounts {
		paths = append(paths, m.Path)
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	rw := newRewriter(root, paths, stub.addr)
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
	var out syncBuffer
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
	if err := waitStarted(exited, rw.dnsPorts, ports); err != nil {
		run.Error = normalise(out.String()+err.Error(), root, rw.dnsPorts)
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
		run.Starts, run.Error = false, normalise(out.String()+fmt.Sprint(err), root, rw.dnsPorts)
	default:
	}
	return run, nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 1<<20 {
		return len(p), nil // bounded: the start-up error is in the first lines
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitStarted waits until every server port answers, or the process exits. A configuration
// whose server blocks all come from imports has no port the rewriter saw: the process is given
// until the start timeout to fail (a file that imports itself takes CoreDNS about 4 s of
// expansions to give up).
func waitStarted(exited chan error, dnsPorts map[string]int, ports []string) error {
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

func exchange(addr, name string, qt uint16, stub *stubUpstream) Answer {
	a := Answer{Question: name + " " + dns.TypeToString[qt], Transport: "udp"}
	before := stub.count(name, qt)
	m := new(dns.Msg)
	m.SetQuestion(name, qt)
	m.RecursionDesired = true
	cl := &dns.Client{Net: "udp", Timeout: queryTimeout}
	r, _, err := cl.Exchange(m, addr)
	a.Forwarded = stub.count(name, qt) > before
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

// normalise writes the root back as the pod's paths, the loopback ports back as the
// Corefile's, and drops timestamps.
func normalise(s, root string, ports map[string]int) string {
	s = strings.ReplaceAll(s, root, "")
	for orig, p := range ports {
		s = strings.ReplaceAll(s, ":"+strconv.Itoa(p), ":"+orig)
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

// stubUpstream plays the public DNS for forward: the zone's names have a public address,
// example.org a documentation address, anything else NXDOMAIN; it counts what it is asked.
type stubUpstream struct {
	zone    string
	addr    string
	mu      sync.Mutex
	asked   map[string]int
	servers []*dns.Server
}

func startStub(zone string) (*stubUpstream, error) {
	s := &stubUpstream{zone: dns.Fqdn(zone), asked: map[string]int{}}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	s.addr = "127.0.0.1:" + strconv.Itoa(port)
	for i := range stubUpstreams {
		for _, netw := range []string{"udp", "tcp"} {
			if err := s.listen(stubAddr(s.addr, i), netw); err != nil {
				s.close()
				return nil, err
			}
		}
	}
	return s, nil
}

func (s *stubUpstream) listen(addr, netw string) error {
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

func (s *stubUpstream) close() {
	for _, srv := range s.servers {
		_ = srv.Shutdown()
	}
}

func (s *stubUpstream) count(name string, qt uint16) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[strings.ToLower(dns.Fqdn(name))+" "+dns.TypeToString[qt]]
}

func (s *stubUpstream) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = true
	if len(r.Question) == 1 {
		q := r.Question[0]
		name := strings.ToLower(q.Name)
		s.mu.Lock()
		s.asked[name+" "+dns.TypeToString[q.Qtype]]++
		s.mu.Unlock()
		var a, aaaa string
		switch {
		case name == "example.org.":
			a, aaaa = "198.51.100.7", "2001:db8::7"
		case dns.IsSubDomain(s.zone, name):
			a, aaaa = "100.64.0.10", "fd7a:115c:a1e0::a"
		default:
			m.Rcode = dns.RcodeNameError
		}
		var rr dns.RR
		switch {
		case q.Qtype == dns.TypeA && a != "":
			rr, _ = dns.NewRR(name + " 30 IN A " + a)
		case q.Qtype == dns.TypeAAAA && aaaa != "":
			rr, _ = dns.NewRR(name + " 30 IN AAAA " + aaaa)
		}
		if rr != nil {
			m.Answer = append(m.Answer, rr)
		}
	}
	_ = w.WriteMsg(m)
}
