// Package replay records what a run of doctor, vpn-trace or client-check read at its
// boundaries (the API server's HTTP exchanges, the commands run in pods, the DNS messages, the
// HTTPS probes' replies, the system resolver's answers) into a bundle, and answers a later run
// from that bundle alone: the same checks judge the same inputs with no cluster and no network.
//
// A bundle is gzip-compressed JSON (docs/replay.md describes every field). Reading one is
// reading hostile input: the compressed and uncompressed sizes are bounded, the format name and
// version are checked first, and every exchange is validated before a run sees it.
package replay

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

const (
	// Format names a bundle; a file without it is not one.
	Format = "kubectl-lanaccess-replay"
	// Version is the format this build writes and the newest it reads.
	Version = 1
	// MaxFileBytes bounds a bundle file as stored (compressed).
	MaxFileBytes = 16 << 20
	// MaxBytes bounds a bundle uncompressed: what a recording may hold and a reader accepts.
	MaxBytes = 64 << 20
	// MaxBodyBytes bounds one recorded API body, one command's output stream, one DNS message.
	MaxBodyBytes = 4 << 20
	// MaxExchanges bounds the exchanges of each kind.
	MaxExchanges = 20000
	// MaxCertBytes bounds one certificate's DER; MaxChain one served chain.
	MaxCertBytes = 64 << 10
	MaxChain     = 16
)

// Bundle is everything one run read, at its boundaries.
type Bundle struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Tool is the version of kubectl-lanaccess that recorded it.
	Tool     string    `json:"tool"`
	Command  string    `json:"command"`
	Recorded time.Time `json:"recorded"`
	// Anonymized says names, hosts and addresses were replaced (--anonymize).
	Anonymized bool `json:"anonymized,omitempty"`
	// Flags are the command's settings that differ from the defaults (files and output
	// settings aside): the replay applies them unless its own command line sets them.
	Flags   []Flag  `json:"flags,omitempty"`
	Cluster Cluster `json:"cluster"`
	// RunID names the run's helper pods; the replay uses it so their names match.
	RunID string `json:"runID,omitempty"`
	// OS is the recording workstation's (client-check asks each its own programs).
	OS string `json:"os,omitempty"`
	// Incomplete lists what the recording could not keep (a bound reached): a replay asking
	// for it gets an error, never an invented answer.
	Incomplete []string   `json:"incomplete,omitempty"`
	API        []API      `json:"api,omitempty"`
	Execs      []Exec     `json:"execs,omitempty"`
	DNS        []DNS      `json:"dns,omitempty"`
	HTTPS      []HTTPS    `json:"https,omitempty"`
	Lookups    []Lookup   `json:"lookups,omitempty"`
	Commands   []Command  `json:"commands,omitempty"`
	Files      []FileRead `json:"files,omitempty"`
	// Calls are the questions to vpn-trace --from-client's prober (see Call).
	Calls []Call `json:"calls,omitempty"`
	// Certificates are the certificates the HTTPS probes were served, as DER (base64 in
	// JSON), each once: an HTTPS exchange's Chain lists its own by index.
	Certificates [][]byte `json:"certificates,omitempty"`
}

// Flag is one command-line setting of the recorded run.
type Flag struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Cluster is where the run pointed: the kubeconfig's context and server (never its
// credentials) and the namespace it defaults to.
type Cluster struct {
	Context   string `json:"context,omitempty"`
	Server    string `json:"server,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// Failure is an error as a replay must return it: Kind keeps what callers test with errors.As
// (a probe that got no answer, a refused connection, a command that exited non-zero, a tool
// missing from an image); Message is the error's text.
type Failure struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// The fields of the typed errors, by kind.
	Target  string        `json:"target,omitempty"`
	Network string        `json:"network,omitempty"`
	What    string        `json:"what,omitempty"`
	Within  time.Duration `json:"within,omitempty"`
	Code    int           `json:"code,omitempty"`
	Stderr  string        `json:"stderr,omitempty"`
	Tool    string        `json:"tool,omitempty"`
}

// API is one HTTP exchange with the API server. Key is the method and the path with its query
// (client-go's timeout parameter left out); ReqBody the request's body for writes (access
// reviews, helper pods). The response keeps its status, its Content-Type and Warning headers
// and its body; never a request header (Authorization) and never a Secret's data.
type API struct {
	Method      string          `json:"method"`
	Path        string          `json:"path"`
	ReqBody     json.RawMessage `json:"reqBody,omitempty"`
	Status      int             `json:"status,omitempty"`
	ContentType string          `json:"contentType,omitempty"`
	Warnings    []string        `json:"warnings,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
	// Text is a body that is not JSON (a plain-text error page).
	Text  string   `json:"text,omitempty"`
	Error *Failure `json:"error,omitempty"`
}

// Exec is one command run in a container: the pod, the container, the command and its input,
// what it wrote (each stream bounded) and how it ended.
type Exec struct {
	Namespace string   `json:"namespace"`
	Pod       string   `json:"pod"`
	Container string   `json:"container,omitempty"`
	Command   []string `json:"command"`
	Stdin     string   `json:"stdin,omitempty"`
	Stdout    string   `json:"stdout,omitempty"`
	Stderr    string   `json:"stderr,omitempty"`
	Error     *Failure `json:"error,omitempty"`
}

// DNS is one question asked of one server: the reply's wire message (base64 in JSON) with
// what the client measured beside it.
type DNS struct {
	Server    string        `json:"server"`
	Name      string        `json:"name"`
	Type      uint16        `json:"type"`
	Network   string        `json:"network"`
	Reply     []byte        `json:"reply,omitempty"`
	ReplyNet  string        `json:"replyNetwork,omitempty"`
	Truncated bool          `json:"truncated,omitempty"`
	Attempts  int           `json:"attempts,omitempty"`
	Mismatch  int           `json:"mismatchedIDs,omitempty"`
	RTT       time.Duration `json:"rtt,omitempty"`
	Error     *Failure      `json:"error,omitempty"`
}

// HTTPS is one pinned HTTPS probe: the request and the reply's head, the certificate chain
// (Chain: indexes into the bundle's Certificates, leaf first, and the reply's TLS as the probe
// judged it), and timings. A replay judges the chain again from the certificates; a bundle
// without them (recorded before they were kept) replays the recorded judgement.
type HTTPS struct {
	Addr     string          `json:"addr"`
	Host     string          `json:"host"`
	Path     string          `json:"path,omitempty"`
	Requests int             `json:"requests,omitempty"`
	Reply    json.RawMessage `json:"reply,omitempty"`
	Chain    []int           `json:"chain,omitempty"`
	Error    *Failure        `json:"error,omitempty"`
}

// Lookup is one question to the system resolver.
type Lookup struct {
	Network string   `json:"network"`
	Host    string   `json:"host"`
	Addrs   []string `json:"addrs,omitempty"`
	Error   *Failure `json:"error,omitempty"`
}

// Command is one program run on this workstation (client-check).
type Command struct {
	Command []string `json:"command"`
	Stdout  string   `json:"stdout,omitempty"`
	Error   *Failure `json:"error,omitempty"`
}

// FileRead is one file read on this workstation (client-check: resolv.conf).
type FileRead struct {
	Path  string   `json:"path"`
	Data  string   `json:"data,omitempty"`
	Error *Failure `json:"error,omitempty"`
}

// FormatError says a file is not a bundle this build can read.
type FormatError struct {
	Path   string
	Reason string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: not a replay bundle this version can read: %s", e.Path, e.Reason)
}

var gzipMagic = []byte{0x1f, 0x8b}

// ReadFile reads and validates the bundle at path (gzip-compressed or plain JSON).
func ReadFile(path string) (*Bundle, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b, err := Read(io.LimitReader(f, MaxFileBytes+1), path)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Read decodes a bundle from r (name is for errors). Sizes are bounded before anything is
// decoded; a foreign file, a newer version or an invalid exchange is a *FormatError.
func Read(r io.Reader, name string) (*Bundle, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(raw) > MaxFileBytes {
		return nil, &FormatError{Path: name, Reason: fmt.Sprintf("larger than %d MiB", MaxFileBytes>>20)}
	}
	if bytes.HasPrefix(raw, gzipMagic) {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, &FormatError{Path: name, Reason: "gzip: " + err.Error()}
		}
		raw, err = io.ReadAll(io.LimitReader(zr, MaxBytes+1))
		if err != nil {
			return nil, &FormatError{Path: name, Reason: "gzip: " + err.Error()}
		}
		if len(raw) > MaxBytes {
			return nil, &FormatError{Path: name, Reason: fmt.Sprintf("larger than %d MiB uncompressed", MaxBytes>>20)}
		}
	}
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
		Tool    string `json:"tool"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.Format != Format {
		return nil, &FormatError{Path: name, Reason: fmt.Sprintf("no %q format field (record one with --record)", Format)}
	}
	if head.Version > Version || head.Version < 1 {
		return nil, &FormatError{Path: name, Reason: fmt.Sprintf("format version %d, this build reads up to %d (recorded by %s: replay it with that version or newer)", head.Version, Version, printable(head.Tool))}
	}
	var b Bundle
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return nil, &FormatError{Path: name, Reason: err.Error()}
	}
	if err := b.validate(); err != nil {
		return nil, &FormatError{Path: name, Reason: err.Error()}
	}
	return &b, nil
}

// validate bounds what a run will be handed.
func (b *Bundle) validate() error {
	for what, n := range map[string]int{"api": len(b.API), "execs": len(b.Execs), "dns": len(b.DNS), "https": len(b.HTTPS), "lookups": len(b.Lookups), "commands": len(b.Commands), "files": len(b.Files), "calls": len(b.Calls), "certificates": len(b.Certificates)} {
		if n > MaxExchanges {
			return fmt.Errorf("%d %s exchanges, more than %d", n, what, MaxExchanges)
		}
	}
	for i, a := range b.API {
		if a.Method == "" || len(a.Path) == 0 || a.Path[0] != '/' {
			return fmt.Errorf("api[%d]: a method and an absolute path are required", i)
		}
		if a.Error == nil && (a.Status < 100 || a.Status > 599) {
			return fmt.Errorf("api[%d]: status %d", i, a.Status)
		}
	}
	for i, d := range b.DNS {
		if d.Error == nil && len(d.Reply) == 0 {
			return fmt.Errorf("dns[%d]: neither a reply nor an error", i)
		}
	}
	if err := b.validateHTTPS(); err != nil {
		return err
	}
	for i, c := range b.Calls {
		if c.Method == "" || len(c.Args) > maxCallBytes || len(c.Result) > maxCallBytes {
			return fmt.Errorf("calls[%d]: a method is required, and arguments and answer of at most %d bytes", i, maxCallBytes)
		}
	}
	return nil
}

// validateHTTPS bounds the HTTPS exchanges and the certificates their chains name: each
// certificate parses (a replay judges it again), each chain's index is in the bundle.
func (b *Bundle) validateHTTPS() error {
	for i, c := range b.Certificates {
		if len(c) > MaxCertBytes {
			return fmt.Errorf("certificates[%d]: %d bytes, more than %d", i, len(c), MaxCertBytes)
		}
		if _, err := x509.ParseCertificate(c); err != nil {
			return fmt.Errorf("certificates[%d]: %w", i, err)
		}
	}
	for i, h := range b.HTTPS {
		if h.Error == nil && len(h.Reply) == 0 {
			return fmt.Errorf("https[%d]: neither a reply nor an error", i)
		}
		if len(h.Chain) > MaxChain {
			return fmt.Errorf("https[%d]: a chain of %d certificates, more than %d", i, len(h.Chain), MaxChain)
		}
		for _, c := range h.Chain {
			if c < 0 || c >= len(b.Certificates) {
				return fmt.Errorf("https[%d]: certificate %d is not in the bundle", i, c)
			}
		}
	}
	return nil
}

// Write stores b gzip-compressed, refusing one larger than MaxBytes.
func (b *Bundle) Write(w io.Writer) error {
	raw, err := json.MarshalIndent(b, "", " ")
	if err != nil {
		return err
	}
	if len(raw) > MaxBytes {
		return fmt.Errorf("the recording is %d MiB, more than the %d MiB a bundle may hold", len(raw)>>20, MaxBytes>>20)
	}
	bw := bufio.NewWriter(w)
	zw, _ := gzip.NewWriterLevel(bw, gzip.BestCompression)
	if _, err := zw.Write(append(raw, '\n')); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteFile stores b at path.
func (b *Bundle) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := b.Write(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// printable keeps a recorded string fit for an error message.
func printable(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			r = '?'
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return "an unknown version"
	}
	return string(out)
}

var errNotRecorded = errors.New("not in the replay bundle")

// Summary counts what b holds, for a person.
func (b *Bundle) Summary() string {
	s := fmt.Sprintf("%d API exchanges, %d commands in pods, %d DNS questions, %d HTTPS probes, %d lookups", len(b.API), len(b.Execs), len(b.DNS), len(b.HTTPS), len(b.Lookups))
	if n := len(b.Commands) + len(b.Files); n > 0 {
		s += fmt.Sprintf(", %d workstation reads", n)
	}
	if n := len(b.Calls); n > 0 {
		s += fmt.Sprintf(", %d questions from this machine", n)
	}
	if b.Anonymized {
		s += ", anonymized"
	}
	return s
}
