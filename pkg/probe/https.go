package probe

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

// HTTPS fetches one URL from a pinned address, like `curl --resolve HOST:PORT:ADDR https://HOST/`.
type HTTPS interface {
	Get(ctx context.Context, req HTTPSRequest) (*HTTPSReply, error)
}

// HTTPSRequest names the address to dial and the host to present; the host is never resolved.
type HTTPSRequest struct {
	Addr netip.AddrPort
	// Host is sent as SNI and as the Host header.
	Host string
	// Path defaults to "/".
	Path string
	// Requests sends this many GETs one after the other on the one connection (keep-alive),
	// each timed in HTTPSReply.FirstBytes; zero means one. Link-quality sampling uses it: one
	// TCP and TLS handshake, several round trips.
	Requests int
}

// URL is the address the request stands for, as a browser would show it.
func (r HTTPSRequest) URL() *url.URL {
	p := r.Path
	if p == "" {
		p = "/"
	}
	host := r.Host
	if r.Addr.Port() != 443 && r.Addr.Port() != 0 {
		host = fmt.Sprintf("%s:%d", r.Host, r.Addr.Port())
	}
	return &url.URL{Scheme: "https", Host: host, Path: p}
}

// HTTPSReply is the first response, never a followed redirect.
type HTTPSReply struct {
	Addr   netip.AddrPort
	Host   string
	Status int
	// Location is the raw header; LocationURL is it resolved against the request URL (nil when
	// absent or unparsable).
	Location    string
	LocationURL *url.URL
	// Server is the Server header, which often names the proxy (or nginx in front of it).
	Server string
	// Header is the whole response head.
	Header  http.Header
	TLS     TLSInfo
	Timings Timings
	// FirstBytes times each request sent on the connection (HTTPSRequest.Requests); the
	// first is Timings.FirstByte.
	FirstBytes []time.Duration
}

// Timings are measured on one fresh connection.
type Timings struct {
	Connect   time.Duration // TCP handshake
	Handshake time.Duration // TLS handshake, after Connect
	FirstByte time.Duration // request write started -> first response byte
}

// HTTPSClient is the real HTTPS prober. It speaks HTTP/1.1 by hand on the pinned connection so
// that the three timings are exact and nothing (proxy settings, redirects, connection reuse,
// name resolution) stands between the probe and the address.
type HTTPSClient struct {
	// Timeout bounds one probe: connect, handshake and response head together.
	Timeout time.Duration
	// Roots verify the chain; nil means the system roots. The handshake never fails on
	// verification: validity is reported, and the checks decide (--insecure).
	Roots *x509.CertPool
	// Now is the clock for expiry; nil means time.Now.
	Now func() time.Time

	// verified keeps the chains already verified in this client's lifetime (one run).
	verified verifyCache
}

// Get dials req.Addr, presents req.Host, sends GET and reads the response head.
func (c *HTTPSClient) Get(ctx context.Context, req HTTPSRequest) (*HTTPSReply, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	start := time.Now()
	deadline := stepDeadline(ctx, start, timeout)
	fail := func(step string, err error) error {
		return classify(ctx, fmt.Errorf("%s: %w", step, err), req.Addr, "tcp", "HTTPS "+req.Host, deadline.Sub(start))
	}

	conn, err := dialTCP(ctx, req.Addr, deadline)
	if err != nil {
		return nil, fail("connect", err)
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, fail("connect", err)
	}
	reply := &HTTPSReply{Addr: req.Addr, Host: req.Host}
	reply.Timings.Connect = time.Since(start)

	tconn := tls.Client(conn, &tls.Config{
		ServerName: req.Host,
		// Verification happens after the handshake, against Roots, so that an invalid
		// certificate is described (subject, names, expiry) instead of ending the probe.
		InsecureSkipVerify: true, //nolint:gosec // verified by hand in describeChain
		NextProtos:         []string{"http/1.1"},
		MinVersion:         tls.VersionTLS12,
	})
	hsStart := time.Now()
	if err := tconn.HandshakeContext(ctx); err != nil {
		return nil, fail("TLS handshake", err)
	}
	reply.Timings.Handshake = time.Since(hsStart)
	reply.TLS = describeChain(tconn.ConnectionState(), req.Host, c.Roots, c.now(), &c.verified)

	// The server's answer is bounded in bytes as well as in time: a response head may not
	// exceed MaxResponseHead (a hostile server streaming headers would otherwise grow memory
	// until the deadline), and a body is discarded up to MaxDiscardedBody.
	rt := &roundTripper{conn: tconn, budget: &budgetReader{r: tconn}, url: req.URL()}
	rt.br = bufio.NewReaderSize(rt.budget, 4096)
	n := max(req.Requests, 1)
	for i := range n {
		last := i == n-1
		resp, firstByte, step, err := rt.get(ctx, last)
		if err != nil {
			if i > 0 {
				break // the server ended the connection early: keep the samples taken
			}
			if step == "" {
				return nil, fmt.Errorf("HTTPS request for %s: %w", req.Host, err)
			}
			return nil, fail(step, err)
		}
		reply.FirstBytes = append(reply.FirstBytes, firstByte)
		if i == 0 {
			reply.record(resp, firstByte, rt.url)
		}
		if last || resp.Close {
			_ = resp.Body.Close() // the head is all we need; the connection closes with us
			break
		}
		if rt.discardBody(resp) != nil {
			break
		}
	}
	return reply, nil
}

// roundTripper sends GET requests on one TLS connection and reads their response heads,
// each within its byte budget.
type roundTripper struct {
	conn   io.Writer
	budget *budgetReader
	br     *bufio.Reader
	url    *url.URL
}

// get sends one request and reads the response head. On error, step names what failed
// ("" when the request could not even be built).
func (rt *roundTripper) get(ctx context.Context, last bool) (*http.Response, time.Duration, string, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, rt.url.String(), nil)
	if err != nil {
		return nil, 0, "", err
	}
	hreq.Header.Set("User-Agent", version.UserAgent())
	hreq.Header.Set("Accept", "*/*")
	hreq.Close = last
	// The clock starts before the write: the server may read the request and start
	// answering before Write returns here, and its time must not fall outside the sample.
	sent := time.Now()
	rt.budget.left = MaxResponseHead + int64(rt.br.Buffered())
	if err := hreq.Write(rt.conn); err != nil {
		return nil, 0, "send request", err
	}
	if _, err := rt.br.Peek(1); err != nil {
		return nil, 0, "read response", err
	}
	firstByte := time.Since(sent)
	resp, err := http.ReadResponse(rt.br, hreq)
	if err != nil {
		return nil, 0, "read response", err
	}
	return resp, firstByte, "", nil
}

// discardBody reads the body out of the way of the next request (a redirect's is a few
// hundred bytes), at most MaxDiscardedBody.
func (rt *roundTripper) discardBody(resp *http.Response) error {
	rt.budget.left = MaxDiscardedBody + int64(rt.br.Buffered())
	_, err := io.Copy(io.Discard, io.LimitReader(resp.Body, MaxDiscardedBody))
	_ = resp.Body.Close()
	return err
}

// record keeps what the first response says: status, headers, server, redirect target.
func (r *HTTPSReply) record(resp *http.Response, firstByte time.Duration, base *url.URL) {
	r.Timings.FirstByte = firstByte
	r.Status = resp.StatusCode
	r.Header = resp.Header
	r.Server = resp.Header.Get("Server")
	if loc := resp.Header.Get("Location"); loc != "" {
		r.Location = loc
		if lu, err := base.Parse(loc); err == nil {
			r.LocationURL = lu
		}
	}
}

func (c *HTTPSClient) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Bounds of what the HTTPS probe reads from a server.
const (
	// MaxResponseHead bounds a response's status line and headers (Go's HTTP client allows
	// 10 MB by default; a redirect's head is a few hundred bytes).
	MaxResponseHead = 64 << 10
	// MaxDiscardedBody bounds the body read away between the samples of one connection.
	MaxDiscardedBody = 64 << 10
)

// errTooLarge ends a read that went past its budget.
var errTooLarge = errors.New("the server sent more than the probe reads (a response head is limited to 64 KiB)")

// budgetReader reads from r until left bytes are spent, then fails.
type budgetReader struct {
	r    io.Reader
	left int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}
