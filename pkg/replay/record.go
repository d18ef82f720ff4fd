package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// Recorder collects the exchanges of one run. Its decorators wrap the run's boundaries
// (WrapTransport the API server's HTTP transport, Executor the pod exec, DNS, HTTPS and
// Resolver the probes, Commands and ReadFile the workstation); they pass every call through
// unchanged and keep a bounded copy of it. Safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	b      Bundle
	budget int
	// certs finds a certificate already kept (by its DER).
	certs map[string]int
}

// NewRecorder starts a recording of command.
func NewRecorder(command, tool string) *Recorder {
	return &Recorder{b: Bundle{Format: Format, Version: Version, Tool: tool, Command: command, Recorded: time.Now().UTC().Truncate(time.Second)}, budget: MaxBytes - (1 << 20)}
}

// SetRun notes what the run was pointed at and how it was set.
func (r *Recorder) SetRun(cluster Cluster, flags []Flag, runID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.b.Cluster = cluster
	r.b.Cluster.Server = withoutUserinfo(cluster.Server)
	r.b.Flags = flags
	r.b.RunID = runID
}

// SetOS notes the workstation's operating system (client-check).
func (r *Recorder) SetOS(os string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.b.OS = os
}

// Bundle returns the recording so far (a copy of its lists).
func (r *Recorder) Bundle() *Bundle {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.b
	b.API = append([]API(nil), r.b.API...)
	b.Execs = append([]Exec(nil), r.b.Execs...)
	b.DNS = append([]DNS(nil), r.b.DNS...)
	b.HTTPS = append([]HTTPS(nil), r.b.HTTPS...)
	b.Lookups = append([]Lookup(nil), r.b.Lookups...)
	b.Commands = append([]Command(nil), r.b.Commands...)
	b.Files = append([]FileRead(nil), r.b.Files...)
	b.Calls = append([]Call(nil), r.b.Calls...)
	b.Certificates = append([][]byte(nil), r.b.Certificates...)
	b.Flags = append([]Flag(nil), r.b.Flags...)
	b.Incomplete = append([]string(nil), r.b.Incomplete...)
	return &b
}

// keep spends size bytes of the budget; false (and a note in Incomplete) when it is spent or
// the kind's list is full.
func (r *Recorder) keep(size, count int, what string) bool {
	if size > r.budget || count >= MaxExchanges {
		if len(r.b.Incomplete) < 100 {
			r.b.Incomplete = append(r.b.Incomplete, bound(what, 300))
		}
		return false
	}
	r.budget -= size
	return true
}

// withoutUserinfo drops credentials a server URL may carry (https://user:pass@host).
func withoutUserinfo(server string) string {
	u, err := url.Parse(server)
	if err != nil || u.User == nil {
		return server
	}
	u.User = nil
	return u.String()
}

// WrapTransport is a rest.Config WrapTransport: every request to the API server is recorded
// with its answer. Request headers are never kept (Authorization, impersonation); the Accept
// header asks for JSON so that the recording is readable and can be anonymized (client-go
// decodes whichever the server sends).
func (r *Recorder) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return &recordingTransport{rec: r, next: rt}
}

type recordingTransport struct {
	rec  *Recorder
	next http.RoundTripper
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ex := API{Method: req.Method, Path: apiPath(req.URL)}
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(io.LimitReader(req.Body, MaxBodyBytes+1))
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		ex.ReqBody = jsonOrString(redactJSON(ex.Path, body))
	}
	if isUpgrade(req) {
		// Exec streams are recorded at the exec interface, not here.
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Accept", "application/json, */*")
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		ex.Error = failureOf(err)
		t.rec.addAPI(ex, 0)
		return resp, err
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{rerr}))
		ex.Error = failureOf(rerr)
		t.rec.addAPI(ex, 0)
		return resp, nil
	}
	if len(body) > MaxBodyBytes {
		t.rec.note(fmt.Sprintf("%s %s: a response body over %d bytes", ex.Method, ex.Path, MaxBodyBytes))
		return resp, nil
	}
	ex.Status = resp.StatusCode
	ex.ContentType = resp.Header.Get("Content-Type")
	ex.Warnings = resp.Header.Values("Warning")
	red := redactJSON(ex.Path, body)
	if json.Valid(red) {
		ex.Body = compactJSON(red)
	} else {
		ex.Text = string(red)
	}
	t.rec.addAPI(ex, len(ex.Body)+len(ex.Text)+len(ex.ReqBody))
	return resp, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func isUpgrade(req *http.Request) bool {
	return req.Header.Get("Upgrade") != "" || strings.Contains(strings.ToLower(req.Header.Get("Connection")), "upgrade")
}

// apiPath is the key of a request: its path and query, without client-go's timeout parameter
// (it follows --request-timeout, not the question).
func apiPath(u *url.URL) string {
	q := u.Query()
	q.Del("timeout")
	p := u.EscapedPath()
	if enc := q.Encode(); enc != "" {
		p += "?" + enc
	}
	return p
}

func jsonOrString(b []byte) json.RawMessage {
	if json.Valid(b) {
		return compactJSON(b)
	}
	s, _ := json.Marshal(string(b))
	return s
}

func compactJSON(b []byte) json.RawMessage {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return b
	}
	return out.Bytes()
}

func (r *Recorder) addAPI(ex API, size int) {
	keepOne(r, &r.b.API, ex, size, ex.Method+" "+ex.Path)
}

// keepOne appends item to one of the recording's lists, within its bounds.
func keepOne[T any](r *Recorder, list *[]T, item T, size int, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keep(size, len(*list), what) {
		*list = append(*list, item)
	}
}

func (r *Recorder) note(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.b.Incomplete) < 100 {
		r.b.Incomplete = append(r.b.Incomplete, bound(what, 300))
	}
}

// Executor records every command run in a pod through next.
func (r *Recorder) Executor(next podexec.Executor) podexec.Executor {
	return &recordingExec{rec: r, next: next}
}

type recordingExec struct {
	rec  *Recorder
	next podexec.Executor
}

func (e *recordingExec) Exec(ctx context.Context, ref podexec.PodRef, container string, cmd []string, stdin io.Reader) ([]byte, []byte, error) {
	var in []byte
	if stdin != nil {
		var err error
		if in, err = io.ReadAll(io.LimitReader(stdin, MaxBodyBytes+1)); err != nil {
			return nil, nil, err
		}
		stdin = bytes.NewReader(in)
	}
	stdout, stderr, err := e.next.Exec(ctx, ref, container, cmd, stdin)
	ex := Exec{Namespace: ref.Namespace, Pod: ref.Name, Container: container, Command: append([]string(nil), cmd...), Stdin: string(in),
		Stdout: string(stdout), Stderr: string(stderr), Error: failureOf(err)}
	size := len(ex.Stdin) + len(ex.Stdout) + len(ex.Stderr)
	if len(in) > MaxBodyBytes {
		size = MaxBytes // never kept: its input was cut
	}
	keepOne(e.rec, &e.rec.b.Execs, ex, size, "exec in "+ref.String()+": "+strings.Join(cmd, " "))
	return stdout, stderr, err
}

// DNS records every question asked through next, with the reply's wire message.
func (r *Recorder) DNS(next probe.DNS) probe.DNS { return &recordingDNS{rec: r, next: next} }

type recordingDNS struct {
	rec  *Recorder
	next probe.DNS
}

func (d *recordingDNS) Query(ctx context.Context, server netip.AddrPort, name string, qtype uint16, network string) (*probe.DNSReply, error) {
	reply, err := d.next.Query(ctx, server, name, qtype, network)
	ex := DNS{Server: server.String(), Name: name, Type: qtype, Network: network, Error: failureOf(err)}
	if reply != nil && reply.Msg != nil {
		wire, perr := reply.Msg.Pack()
		if perr != nil {
			d.rec.note(fmt.Sprintf("DNS %s from %s: the reply does not pack: %v", name, server, perr))
			return reply, err
		}
		ex.Reply, ex.ReplyNet, ex.Truncated, ex.Attempts, ex.Mismatch, ex.RTT = wire, reply.Network, reply.Truncated, reply.Attempts, reply.MismatchedIDs, reply.RTT
	}
	if ex.Error == nil && ex.Reply == nil {
		return reply, err
	}
	keepOne(d.rec, &d.rec.b.DNS, ex, len(ex.Reply)+len(name), "DNS "+name)
	return reply, err
}

// HTTPS records every pinned probe made through next: the reply's head, the certificate chain
// as the probe judged it, and the timings.
func (r *Recorder) HTTPS(next probe.HTTPS) probe.HTTPS { return &recordingHTTPS{rec: r, next: next} }

type recordingHTTPS struct {
	rec  *Recorder
	next probe.HTTPS
}

func (h *recordingHTTPS) Get(ctx context.Context, req probe.HTTPSRequest) (*probe.HTTPSReply, error) {
	reply, err := h.next.Get(ctx, req)
	ex := HTTPS{Addr: req.Addr.String(), Host: req.Host, Path: req.Path, Requests: req.Requests, Error: failureOf(err)}
	if reply != nil {
		cp := *reply
		cp.LocationURL = nil // rebuilt from Location on replay
		raw, merr := json.Marshal(cp)
		if merr != nil {
			h.rec.note("HTTPS " + req.Host + ": " + merr.Error())
			return reply, err
		}
		ex.Reply = raw
	}
	if ex.Error == nil && ex.Reply == nil {
		return reply, err
	}
	if reply != nil && len(reply.TLS.Chain) <= MaxChain {
		ex.Chain = h.rec.keepCerts(reply.TLS.Chain)
	}
	keepOne(h.rec, &h.rec.b.HTTPS, ex, len(ex.Reply), "HTTPS "+req.Host)
	return reply, err
}

// keepCerts adds the chain's certificates the bundle does not hold yet and returns their
// indexes. A certificate over the bounds leaves the chain out (the replay then uses the
// recorded judgement).
func (r *Recorder) keepCerts(chain [][]byte) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.certs == nil {
		r.certs = map[string]int{}
	}
	idx := make([]int, 0, len(chain))
	for _, der := range chain {
		if i, ok := r.certs[string(der)]; ok {
			idx = append(idx, i)
			continue
		}
		if len(der) > MaxCertBytes || len(r.b.Certificates) >= MaxExchanges || len(der) > r.budget {
			return nil
		}
		r.budget -= len(der)
		r.certs[string(der)] = len(r.b.Certificates)
		idx = append(idx, len(r.b.Certificates))
		r.b.Certificates = append(r.b.Certificates, bytes.Clone(der))
	}
	return idx
}

// Resolver records the system resolver's answers.
func (r *Recorder) Resolver(next probe.Resolver) probe.Resolver {
	return &recordingResolver{rec: r, next: next}
}

type recordingResolver struct {
	rec  *Recorder
	next probe.Resolver
}

func (l *recordingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	addrs, err := l.next.LookupNetIP(ctx, network, host)
	ex := Lookup{Network: network, Host: host, Error: failureOf(err)}
	for _, a := range addrs {
		ex.Addrs = append(ex.Addrs, a.String())
	}
	keepOne(l.rec, &l.rec.b.Lookups, ex, len(host)+16*len(addrs), "lookup "+host)
	return addrs, err
}

// Commands records the programs client-check runs on this workstation.
func (r *Recorder) Commands(next workstation.CommandRunner) workstation.CommandRunner {
	return &recordingCommands{rec: r, next: next}
}

type recordingCommands struct {
	rec  *Recorder
	next workstation.CommandRunner
}

func (c *recordingCommands) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	out, err := c.next.Run(ctx, name, args...)
	ex := Command{Command: append([]string{name}, args...), Stdout: string(out), Error: failureOf(err)}
	keepOne(c.rec, &c.rec.b.Commands, ex, len(out), "command "+name)
	return out, err
}

// ReadFile records the files client-check reads on this workstation.
func (r *Recorder) ReadFile(next func(string) ([]byte, error)) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		data, err := next(path)
		ex := FileRead{Path: path, Data: string(data), Error: failureOf(err)}
		keepOne(r, &r.b.Files, ex, len(data), "file "+path)
		return data, err
	}
}
