package replay

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// Player answers a run from a bundle: the API server through Transport, the pods through
// Executor, the network through DNS, HTTPS and Resolver, the workstation through Commands and
// ReadFile. Each question is matched by its key (an API request's method, path and body; an
// exec's pod, container, command and input; a DNS question's server, name, type and
// transport...); the same question asked again gets the recorded answers in order, then the
// last one again (a poll). A question the bundle does not hold is an error naming it, which
// the check reports as ERROR: never an invented answer.
type Player struct {
	bundle *Bundle
	mu     sync.Mutex
	queues map[string]*queue
	// roots, when set (the replay's --ca-file), verify the recorded chains again; nil keeps
	// the recorded verification (the recording machine's roots are not in the bundle).
	roots *x509.CertPool
	// silent are the addresses (address and port) that gave no answer in the recording.
	silent map[string]*Failure
}

type queue struct {
	items []int
	next  int
}

// NewPlayer indexes b.
func NewPlayer(b *Bundle) *Player {
	p := &Player{bundle: b, queues: map[string]*queue{}, silent: map[string]*Failure{}}
	add := func(key string, i int) {
		q := p.queues[key]
		if q == nil {
			q = &queue{}
			p.queues[key] = q
		}
		q.items = append(q.items, i)
	}
	for i, a := range b.API {
		add(apiKey(a.Method, a.Path, a.ReqBody), i)
	}
	for i, e := range b.Execs {
		add(execKey(e.Namespace, e.Pod, e.Container, e.Command, e.Stdin), i)
	}
	for i, d := range b.DNS {
		add(dnsKey(d.Server, d.Name, d.Type, d.Network), i)
		if d.Error != nil && d.Error.Kind == kindNoAnswer {
			p.silent[d.Server] = d.Error
		}
	}
	for i, h := range b.HTTPS {
		add(httpsKey(h.Addr, h.Host, h.Path, h.Requests), i)
		if h.Error != nil && h.Error.Kind == kindNoAnswer {
			p.silent[h.Addr] = h.Error
		}
	}
	for i, l := range b.Lookups {
		add(lookupKey(l.Network, l.Host), i)
	}
	for i, c := range b.Commands {
		add(commandKey(c.Command), i)
	}
	for i, f := range b.Files {
		add("file "+f.Path, i)
	}
	for i, c := range b.Calls {
		add(callKey(c.Method, c.Args), i)
	}
	return p
}

// Bundle is the bundle being replayed.
func (p *Player) Bundle() *Bundle { return p.bundle }

// take returns the index of the next recorded answer to key.
func (p *Player) take(key string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queues[key]
	if q == nil {
		return 0, &NotRecordedError{Key: key}
	}
	i := q.items[min(q.next, len(q.items)-1)]
	q.next++
	return i, nil
}

// NotRecordedError is a question the bundle holds no answer to: the recorded run did not ask
// it (other flags, another version of the tool), or a bound cut the recording.
type NotRecordedError struct{ Key string }

func (e *NotRecordedError) Error() string {
	return fmt.Sprintf("%v: %s (the recorded run did not ask it: replay with the recorded flags and version)", errNotRecorded, bound(e.Key, 300))
}

func (e *NotRecordedError) Unwrap() error { return errNotRecorded }

// NotRecorded marks the error for seams outside this package (checks/vpn/facts's prober):
// no answer at all, which they report as an error rather than as an outcome.
func (e *NotRecordedError) NotRecorded() bool { return true }

// silentAnswer: a question the recording did not ask of an address that gave no answer in it.
// The probes stop asking an address after its first silence (probe.Liveness), and which
// question came first depends on the checks' concurrency: whichever comes first in the replay
// meets the same silence.
func (p *Player) silentAnswer(addr netip.AddrPort, network, what string, err error) error {
	f := p.silent[addr.String()]
	if f == nil {
		return err
	}
	return &probe.NoAnswerError{Target: addr, Network: network, What: what, Within: f.Within, Err: errors.New("replayed: the address gave no answer in the recording")}
}

// Helper pods are named lanaccess-<run>-<sequence>-<node>; the sequence follows the order the
// nodes were reached in, which concurrent checks do not fix, so keys leave it out.
var helperSeq = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(lanaccess-[0-9a-f]{8})-[0-9]+-`) })

// The random labels of doctor's DNS probes (checks/netpath: lanaccess-probe-<8>) and
// client-check's probe name (lanaccess-<8 hex>).
var randomLabel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\blanaccess-(probe-[a-z0-9]{8}|[0-9a-f]{8})\.`) })

func normalize(s string) string {
	s = helperSeq().ReplaceAllString(s, "$1-N-")
	return randomLabel().ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(strings.ToLower(m), "lanaccess-probe-") {
			return "lanaccess-probe-RANDOM."
		}
		return "lanaccess-RANDOM."
	})
}

func apiKey(method, path string, body json.RawMessage) string {
	key := "api " + method + " " + normalize(path)
	if len(body) > 0 {
		// A body is compared as compact JSON: a bundle stores it indented.
		key += " " + normalize(string(compactJSON(body)))
	}
	return key
}

func execKey(ns, pod, container string, cmd []string, stdin string) string {
	q := make([]string, len(cmd))
	for i, c := range cmd {
		q[i] = strconv.Quote(c)
	}
	return normalize(fmt.Sprintf("exec %s/%s[%s] %s <%q", ns, pod, container, strings.Join(q, " "), stdin))
}

func dnsKey(server, name string, qtype uint16, network string) string {
	return normalize(fmt.Sprintf("dns %s %s %s %s", server, strings.ToLower(dns.Fqdn(name)), probe.TypeName(qtype), network))
}

func httpsKey(addr, host, path string, requests int) string {
	return normalize(fmt.Sprintf("https %s %s %s x%d", addr, strings.ToLower(host), path, requests))
}

func lookupKey(network, host string) string {
	return normalize("lookup " + network + " " + strings.ToLower(host))
}

func commandKey(cmd []string) string {
	q := make([]string, len(cmd))
	for i, c := range cmd {
		q[i] = strconv.Quote(c)
	}
	return normalize("command " + strings.Join(q, " "))
}

// Transport answers the API requests of a replayed run (a rest.Config's Transport).
func (p *Player) Transport() http.RoundTripper { return playTransport{p} }

type playTransport struct{ p *Player }

func (t playTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	path := apiPath(req.URL)
	var body json.RawMessage
	if req.Body != nil && req.Body != http.NoBody {
		raw, err := io.ReadAll(io.LimitReader(req.Body, MaxBodyBytes+1))
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = jsonOrString(redactJSON(path, raw))
	}
	i, err := t.p.take(apiKey(req.Method, path, body))
	if err != nil {
		return nil, err
	}
	a := t.p.bundle.API[i]
	if a.Error != nil {
		return nil, a.Error.Err()
	}
	h := http.Header{}
	payload := []byte(a.Text)
	if len(a.Body) > 0 {
		payload = a.Body
	}
	if a.ContentType != "" {
		h.Set("Content-Type", a.ContentType)
	}
	for _, w := range a.Warnings {
		h.Add("Warning", w)
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", a.Status, http.StatusText(a.Status)), StatusCode: a.Status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Request: req,
		Body: io.NopCloser(bytes.NewReader(payload)), ContentLength: int64(len(payload)),
	}, nil
}

// Executor answers the commands run in pods.
func (p *Player) Executor() podexec.Executor { return playExec{p} }

type playExec struct{ p *Player }

func (e playExec) Exec(_ context.Context, ref podexec.PodRef, container string, cmd []string, stdin io.Reader) ([]byte, []byte, error) {
	var in []byte
	if stdin != nil {
		var err error
		if in, err = io.ReadAll(io.LimitReader(stdin, MaxBodyBytes+1)); err != nil {
			return nil, nil, err
		}
	}
	i, err := e.p.take(execKey(ref.Namespace, ref.Name, container, cmd, string(in)))
	if err != nil {
		return nil, nil, err
	}
	x := e.p.bundle.Execs[i]
	err = x.Error.Err()
	if ee, ok := asExit(err); ok {
		ee.Pod, ee.Container, ee.Command = ref, container, cmd
	}
	return []byte(x.Stdout), []byte(x.Stderr), err
}

func asExit(err error) (*podexec.ExitError, bool) {
	if r, ok := err.(*replayed); ok {
		ee, ok := r.cause.(*podexec.ExitError)
		return ee, ok
	}
	return nil, false
}

// DNS answers the DNS questions with the recorded wire messages.
func (p *Player) DNS() probe.DNS { return playDNS{p} }

type playDNS struct{ p *Player }

func (d playDNS) Query(_ context.Context, server netip.AddrPort, name string, qtype uint16, network string) (*probe.DNSReply, error) {
	i, err := d.p.take(dnsKey(server.String(), name, qtype, network))
	if err != nil {
		return nil, d.p.silentAnswer(server, network, probe.TypeName(qtype)+" "+dns.Fqdn(name), err)
	}
	x := d.p.bundle.DNS[i]
	if x.Error != nil {
		return nil, x.Error.Err()
	}
	m := new(dns.Msg)
	if err := m.Unpack(x.Reply); err != nil {
		return nil, fmt.Errorf("replay bundle: the DNS reply to %s from %s does not unpack: %w", name, server, err)
	}
	if asked, recorded := dns.Fqdn(name), dns.Fqdn(x.Name); !strings.EqualFold(asked, recorded) {
		// The same question under another random label: the answer names the label asked.
		m = renameMsg(m, recorded, asked)
	}
	return &probe.DNSReply{Server: server, Network: x.ReplyNet, Truncated: x.Truncated, Attempts: x.Attempts, MismatchedIDs: x.Mismatch, RTT: x.RTT, Msg: m}, nil
}

// renameMsg replaces the owner name from by to in m's question and records.
func renameMsg(m *dns.Msg, from, to string) *dns.Msg {
	r := strings.NewReplacer(from, to, strings.ToLower(from), to)
	for i := range m.Question {
		m.Question[i].Name = r.Replace(m.Question[i].Name)
	}
	for _, sec := range []*[]dns.RR{&m.Answer, &m.Ns, &m.Extra} {
		for i, rr := range *sec {
			if rr.Header().Rrtype == dns.TypeOPT {
				continue
			}
			if nrr, err := dns.NewRR(r.Replace(rr.String())); err == nil && nrr != nil {
				(*sec)[i] = nrr
			}
		}
	}
	return m
}

// HTTPS answers the pinned HTTPS probes.
func (p *Player) HTTPS() probe.HTTPS { return playHTTPS{p} }

type playHTTPS struct{ p *Player }

func (h playHTTPS) Get(_ context.Context, req probe.HTTPSRequest) (*probe.HTTPSReply, error) {
	i, err := h.p.take(httpsKey(req.Addr.String(), req.Host, req.Path, req.Requests))
	if err != nil {
		return nil, h.p.silentAnswer(req.Addr, "tcp", "HTTPS "+req.Host, err)
	}
	x := h.p.bundle.HTTPS[i]
	if x.Error != nil {
		return nil, x.Error.Err()
	}
	var reply probe.HTTPSReply
	if err := json.Unmarshal(x.Reply, &reply); err != nil {
		return nil, fmt.Errorf("replay bundle: the HTTPS reply of %s from %s: %w", req.Host, req.Addr, err)
	}
	if reply.Location != "" {
		if lu, err := req.URL().Parse(reply.Location); err == nil {
			reply.LocationURL = lu
		}
	}
	if len(x.Chain) > 0 {
		reply.TLS = h.p.judgeChain(x.Chain, reply.TLS, req.Host)
	}
	return &reply, nil
}

// SetRoots makes the replay verify every recorded chain against roots (the replay's
// --ca-file) instead of keeping the recorded verification.
func (p *Player) SetRoots(roots *x509.CertPool) { p.roots = roots }

// judgeChain judges the recorded certificates again, as the probe did: the names, dates,
// fingerprint and host match come from the DER, at the instant the probe judged them. The
// verification is the recorded one unless the replay was given roots (SetRoots).
func (p *Player) judgeChain(chain []int, recorded probe.TLSInfo, host string) probe.TLSInfo {
	certs := make([]*x509.Certificate, 0, len(chain))
	for _, i := range chain {
		c, err := x509.ParseCertificate(p.bundle.Certificates[i]) // validated on reading
		if err != nil {
			return recorded
		}
		certs = append(certs, c)
	}
	at := recorded.CheckedAt
	if at.IsZero() {
		at = p.bundle.Recorded
	}
	info := probe.DescribeCertificates(certs, recorded.Version, host, p.roots, at)
	if p.roots == nil {
		info.Verified, info.VerifyError = recorded.Verified, recorded.VerifyError
	}
	return info
}

// Resolver answers the system resolver's lookups.
func (p *Player) Resolver() probe.Resolver { return playResolver{p} }

type playResolver struct{ p *Player }

func (l playResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	i, err := l.p.take(lookupKey(network, host))
	if err != nil {
		return nil, err
	}
	x := l.p.bundle.Lookups[i]
	var out []netip.Addr
	for _, s := range x.Addrs {
		a, perr := netip.ParseAddr(s)
		if perr != nil {
			return nil, fmt.Errorf("replay bundle: lookup %s: %w", host, perr)
		}
		out = append(out, a)
	}
	return out, x.Error.Err()
}

// Commands answers the programs run on the workstation.
func (p *Player) Commands() workstation.CommandRunner { return playCommands{p} }

type playCommands struct{ p *Player }

func (c playCommands) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	i, err := c.p.take(commandKey(append([]string{name}, args...)))
	if err != nil {
		return nil, err
	}
	x := c.p.bundle.Commands[i]
	return []byte(x.Stdout), x.Error.Err()
}

// ReadFile answers the files read on the workstation.
func (p *Player) ReadFile(path string) ([]byte, error) {
	i, err := p.take("file " + path)
	if err != nil {
		return nil, err
	}
	x := p.bundle.Files[i]
	return []byte(x.Data), x.Error.Err()
}
