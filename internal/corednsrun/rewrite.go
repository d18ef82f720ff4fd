package corednsrun

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Rewriter changes only what running the pod's Corefile on this machine requires, without
// using the model under test to read it: every server port moves to a free loopback port,
// forward's upstreams to the stub, the HTTP listeners of health/ready/prometheus to free
// loopback ports, bind to 127.0.0.1, the kubernetes plugin to an API endpoint (by default one
// that never answers), and absolute paths under the pod's mounts into the laid-out root. Files
// are rewritten where they are (through the kubelet's symlinks), each once. Every change is
// noted (Notes). The corpus harness (testdata/corpus) runs its truths through it too.
type Rewriter struct {
	root      string
	mounts    []string
	stub      string
	opts      RewriteOptions
	dnsPorts  map[string]int // port written in the Corefile -> loopback port
	httpPorts map[string]int // port of a health/ready/prometheus listener -> loopback port
	notes     []string
	seen      map[string]bool // files already rewritten, by real path
}

// RewriteOptions are what a caller may change in how the Rewriter runs a Corefile.
type RewriteOptions struct {
	// API is the URL given to the kubernetes plugin as its endpoint, APINote what it is (for
	// the notes). Empty: http://127.0.0.1:1, which never answers.
	API, APINote string
	// OneStub sends every forward to the stub's address alone, instead of one distinct stub
	// address per upstream (which keeps forward's count of upstreams as written).
	OneStub bool
}

const neverAnswers = "http://127.0.0.1:1"

// NewRewriter rewrites files laid out under root for the pod's mounts (paths in the pod), with
// stub (host:port) as forward's upstream.
func NewRewriter(root string, mounts []string, stub string, o RewriteOptions) *Rewriter {
	if o.API == "" {
		o.API, o.APINote = neverAnswers, "an address that never answers"
	}
	return &Rewriter{root: root, mounts: mounts, stub: stub, opts: o,
		dnsPorts: map[string]int{}, httpPorts: map[string]int{}, seen: map[string]bool{}}
}

// File rewrites the -conf file at pod path p and every file it imports.
func (r *Rewriter) File(p string) error { return r.file(p, 0) }

// DNSPorts maps each server port written in the Corefile to its loopback port.
func (r *Rewriter) DNSPorts() map[string]int { return r.dnsPorts }

// HTTPPorts maps each port of a health/ready/prometheus listener to its loopback port.
func (r *Rewriter) HTTPPorts() map[string]int { return r.httpPorts }

// Notes are the changes made, "file: what -> what", in the order made.
func (r *Rewriter) Notes() []string { return r.notes }

func (r *Rewriter) note(file, format string, args ...any) {
	r.notes = append(r.notes, file+": "+fmt.Sprintf(format, args...))
}

// FreePort returns a port free for both UDP and TCP on 127.0.0.1.
func FreePort() (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(p))
		_ = l.Close()
		if err == nil {
			_ = u.Close()
			return p, nil
		}
	}
	return 0, fmt.Errorf("no port free for both UDP and TCP on 127.0.0.1")
}

func (r *Rewriter) port(m map[string]int, orig string) (int, error) {
	if p, ok := m[orig]; ok {
		return p, nil
	}
	p, err := FreePort()
	if err != nil {
		return 0, err
	}
	m[orig] = p
	return p, nil
}

// inRoot maps an absolute pod path under a mount (or /etc/resolv.conf) into the root.
func (r *Rewriter) inRoot(p string) (string, bool) {
	if !strings.HasPrefix(p, "/") {
		return p, false
	}
	if p == "/etc/resolv.conf" {
		return filepath.Join(r.root, p), true
	}
	for _, m := range r.mounts {
		if p == m || strings.HasPrefix(p, strings.TrimSuffix(m, "/")+"/") {
			return filepath.Join(r.root, p), true
		}
	}
	return p, false
}

// words splits a line into words, quotes kept; a # starting a word ends the line.
func words(line string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\\' && quoted && i+1 < len(line):
			cur.WriteByte(ch)
			i++
			cur.WriteByte(line[i])
		case ch == '"':
			quoted = !quoted
			cur.WriteByte(ch)
		case !quoted && ch == '#' && cur.Len() == 0:
			flush()
			return out
		case !quoted && (ch == ' ' || ch == '\t'):
			flush()
		default:
			cur.WriteByte(ch)
		}
	}
	flush()
	return out
}

// file rewrites the file at pod path p, read at block depth depth.
func (r *Rewriter) file(p string, depth int) error {
	full, ok := r.inRoot(p)
	if !ok {
		return fmt.Errorf("%s is not under a mount of the pod", p)
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return err
	}
	if r.seen[real] {
		return nil
	}
	r.seen[real] = true
	raw, err := os.ReadFile(real)
	if err != nil {
		return err
	}
	var out []string
	for line := range strings.SplitSeq(string(raw), "\n") {
		ws := words(line)
		if len(ws) == 0 {
			out = append(out, line)
			continue
		}
		nl, err := r.line(p, line, ws, depth)
		if err != nil {
			return err
		}
		out = append(out, nl)
		for _, w := range ws {
			switch w {
			case "{":
				depth++
			case "}":
				depth--
			}
		}
	}
	return os.WriteFile(real, []byte(strings.Join(out, "\n")), 0o600)
}

func (r *Rewriter) line(file, line string, ws []string, depth int) (string, error) {
	ind := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
	switch {
	case ws[0] == "import" && len(ws) > 1:
		return r.importLine(ind, ws, depth)
	case depth == 0 && ws[0] != "}" && !strings.HasPrefix(ws[0], "("):
		return r.keyLine(ind, ws)
	case depth == 1:
		return r.directive(file, ind, ws, line)
	}
	return r.paths(ind, ws, line), nil
}

func (r *Rewriter) importLine(ind string, ws []string, depth int) (string, error) {
	full, ok := r.inRoot(ws[1])
	if !ok {
		return ind + strings.Join(ws, " "), nil
	}
	matches, err := filepath.Glob(full)
	if err != nil {
		return "", err
	}
	sort.Strings(matches)
	for _, m := range matches {
		if fi, err := os.Stat(m); err != nil || fi.IsDir() {
			continue // CoreDNS reports it; nothing to rewrite
		}
		if err := r.file(strings.TrimPrefix(m, r.root), depth); err != nil {
			return "", err
		}
	}
	ws[1] = full
	return ind + strings.Join(ws, " "), nil
}

// keyLine moves each server block key to its loopback port (53 when none is written).
func (r *Rewriter) keyLine(ind string, ws []string) (string, error) {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		if w == "{" {
			out = append(out, w)
			continue
		}
		comma := strings.HasSuffix(w, ",")
		key := strings.TrimSuffix(w, ",")
		scheme := ""
		if i := strings.Index(key, "://"); i >= 0 {
			scheme, key = key[:i+3], key[i+3:]
		}
		host, port := key, "53"
		if i := strings.LastIndex(key, ":"); i >= 0 {
			if i == len(key)-1 {
				out = append(out, w) // CoreDNS refuses it as written
				continue
			}
			if _, err := strconv.Atoi(key[i+1:]); err == nil {
				host, port = key[:i], key[i+1:]
			}
		}
		p, err := r.port(r.dnsPorts, port)
		if err != nil {
			return "", err
		}
		nk := fmt.Sprintf("%s%s:%d", scheme, host, p)
		if comma {
			nk += ","
		}
		out = append(out, nk)
	}
	return ind + strings.Join(out, " "), nil
}

var httpDefaults = map[string]string{"health": ":8080", "ready": ":8181", "prometheus": "localhost:9153"}

func (r *Rewriter) directive(file, ind string, ws []string, line string) (string, error) {
	args := ws[1:]
	opens := len(args) > 0 && args[len(args)-1] == "{"
	if opens {
		args = args[:len(args)-1]
	}
	tail := ""
	if opens {
		tail = " {"
	}
	switch ws[0] {
	case "forward":
		if len(args) >= 2 {
			return r.forward(file, ind, args, tail), nil
		}
	case "health", "ready", "prometheus":
		addr := httpDefaults[ws[0]]
		if len(args) > 0 {
			addr = args[0]
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return line, nil // CoreDNS refuses it: keep it as written
		}
		p, err := r.port(r.httpPorts, port)
		if err != nil {
			return "", err
		}
		rest := ""
		if len(args) > 1 {
			rest = " " + strings.Join(args[1:], " ")
		}
		r.note(file, "%s %s -> %s 127.0.0.1:%d", ws[0], addr, ws[0], p)
		return fmt.Sprintf("%s%s 127.0.0.1:%d%s%s", ind, ws[0], p, rest, tail), nil
	case "bind":
		r.note(file, "bind %s -> bind 127.0.0.1", strings.Join(args, " "))
		return ind + "bind 127.0.0.1" + tail, nil
	case "kubernetes":
		r.note(file, "kubernetes %s: endpoint %s added (%s)", strings.Join(args, " "), r.opts.API, r.opts.APINote)
		endpoint := ind + "    endpoint " + r.opts.API
		if opens {
			return ind + strings.Join(ws, " ") + "\n" + endpoint, nil
		}
		return ind + strings.Join(ws, " ") + " {\n" + endpoint + "\n" + ind + "}", nil
	}
	return r.paths(ind, ws, line), nil
}

// forward sends forward's upstreams to the stub: one distinct stub address per upstream
// (forward counts, and deduplicates, them), or the stub's address alone with OneStub.
func (r *Rewriter) forward(file, ind string, args []string, tail string) string {
	tos := []string{r.stub}
	if !r.opts.OneStub {
		tos = make([]string, 0, len(args)-1)
		for i := range args[1:] {
			tos = append(tos, stubAddr(r.stub, i))
		}
	}
	to := strings.Join(tos, " ")
	r.note(file, "forward %s %s -> forward %s %s (stub upstream)", args[0], strings.Join(args[1:], " "), args[0], to)
	return ind + "forward " + args[0] + " " + to + tail
}

// paths points absolute paths under the pod's mounts into the root; other lines stay as written.
func (r *Rewriter) paths(ind string, ws []string, line string) string {
	changed := false
	for i, w := range ws {
		if full, ok := r.inRoot(w); ok {
			ws[i], changed = full, true
		}
	}
	if !changed {
		return line
	}
	return ind + strings.Join(ws, " ")
}

// stubUpstreams is how many loopback addresses the stub listens on (forward takes at most 15
// upstreams; one more shows its limit).
const stubUpstreams = 16

// stubAddr is the i-th address of the stub: 127.0.0.(i+1) on its port.
func stubAddr(stub string, i int) string {
	_, port, _ := net.SplitHostPort(stub)
	return net.JoinHostPort(fmt.Sprintf("127.0.0.%d", i%stubUpstreams+1), port)
}
