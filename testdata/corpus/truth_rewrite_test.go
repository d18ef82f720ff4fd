//go:build corpus

package corpus

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// rewriter adapts the files of one CoreDNS workload so that the real binary can run them on
// this machine without changing what they mean: server ports and the HTTP listeners of
// health/ready/prometheus move to free loopback ports, forward's upstreams become the stub,
// the kubernetes plugin reads the fake API server, absolute paths under the pod's mounts
// point into the laid-out root. Every change is recorded in notes. Nothing else is touched.
type rewriter struct {
	root   string
	mounts []string
	stub   string // host:port of the stub upstream
	api    string // URL of the fake API server

	dnsPorts  map[string]int // port written in the Corefile -> loopback port
	httpPorts map[string]int // port of a health/ready/prometheus listener -> loopback port
	notes     []string
	seen      map[string]bool // files already rewritten
}

func newRewriter(root string, mounts []string, stub, api string) *rewriter {
	return &rewriter{root: root, mounts: mounts, stub: stub, api: api,
		dnsPorts: map[string]int{}, httpPorts: map[string]int{}, seen: map[string]bool{}}
}

// freePort returns a port free for both UDP and TCP on 127.0.0.1.
func freePort() (int, error) {
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

func (r *rewriter) port(m map[string]int, orig string) (int, error) {
	if p, ok := m[orig]; ok {
		return p, nil
	}
	p, err := freePort()
	if err != nil {
		return 0, err
	}
	m[orig] = p
	return p, nil
}

// inRoot maps a path of the pod to the laid-out root, when it is under one of its mounts or
// is /etc/resolv.conf.
func (r *rewriter) inRoot(p string) (string, bool) {
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

// token is one whitespace-separated word of a line, with quotes kept as written.
func tokens(line string) []string {
	var out []string
	var cur strings.Builder
	inQuote := false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\\' && inQuote && i+1 < len(line):
			cur.WriteByte(ch)
			i++
			cur.WriteByte(line[i])
		case ch == '"':
			inQuote = !inQuote
			cur.WriteByte(ch)
		case !inQuote && ch == '#' && cur.Len() == 0:
			return flush(out, &cur)
		case !inQuote && (ch == ' ' || ch == '\t'):
			out = flush(out, &cur)
		default:
			cur.WriteByte(ch)
		}
	}
	return flush(out, &cur)
}

func flush(out []string, b *strings.Builder) []string {
	if b.Len() > 0 {
		out = append(out, b.String())
		b.Reset()
	}
	return out
}

// file rewrites the file at the pod path p; depth is the block depth at which it is read
// (0 for the Corefile and for files imported between server blocks, 1 inside one).
func (r *rewriter) file(p string, depth int) error {
	full, ok := r.inRoot(p)
	if !ok {
		return fmt.Errorf("%s is not under a mount of the pod", p)
	}
	if r.seen[full] {
		return nil
	}
	r.seen[full] = true
	raw, err := os.ReadFile(full)
	if err != nil {
		return err
	}
	lines := strings.Split(string(raw), "\n")
	var out []string
	for _, line := range lines {
		toks := tokens(line)
		if len(toks) == 0 {
			out = append(out, line)
			continue
		}
		newLine, err := r.line(p, line, toks, depth)
		if err != nil {
			return err
		}
		out = append(out, newLine)
		for _, t := range toks {
			switch t {
			case "{":
				depth++
			case "}":
				depth--
			}
		}
	}
	return os.WriteFile(full, []byte(strings.Join(out, "\n")), 0o644)
}

func indentOf(line string) string { return line[:len(line)-len(strings.TrimLeft(line, " \t"))] }

func (r *rewriter) line(file, line string, toks []string, depth int) (string, error) {
	ind := indentOf(line)
	switch {
	case toks[0] == "import":
		return r.importLine(file, ind, toks, depth)
	case depth == 0 && toks[0] != "}":
		return r.keyLine(file, ind, toks)
	case depth == 1:
		return r.directive(file, ind, toks, line)
	}
	return r.paths(file, ind, toks, line), nil
}

func (r *rewriter) note(file, format string, args ...any) {
	r.notes = append(r.notes, file+": "+fmt.Sprintf(format, args...))
}

func (r *rewriter) importLine(file, ind string, toks []string, depth int) (string, error) {
	if len(toks) < 2 {
		return ind + strings.Join(toks, " "), nil
	}
	full, ok := r.inRoot(toks[1])
	if !ok {
		return ind + strings.Join(toks, " "), nil // a snippet or a path outside the mounts: as written
	}
	matches, err := filepath.Glob(full)
	if err != nil {
		return "", err
	}
	sort.Strings(matches)
	for _, m := range matches {
		if err := r.file(strings.TrimPrefix(m, r.root), depth); err != nil {
			return "", err
		}
	}
	toks[1] = full
	return ind + strings.Join(toks, " "), nil
}

// keyLine moves every server address of a block to its loopback port (53 when none is written).
func (r *rewriter) keyLine(file, ind string, toks []string) (string, error) {
	out := make([]string, 0, len(toks))
	for _, t := range toks {
		if t == "{" {
			out = append(out, t)
			continue
		}
		comma := strings.HasSuffix(t, ",")
		key := strings.TrimSuffix(t, ",")
		scheme := ""
		if i := strings.Index(key, "://"); i >= 0 {
			scheme, key = key[:i+3], key[i+3:]
		}
		host, port := key, "53"
		if i := strings.LastIndex(key, ":"); i >= 0 {
			host, port = key[:i], key[i+1:]
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

// httpDefaults are the listeners of plugins that serve HTTP, with their default address.
var httpDefaults = map[string]string{"health": ":8080", "ready": ":8181", "prometheus": "localhost:9153"}

func (r *rewriter) directive(file, ind string, toks []string, line string) (string, error) {
	name := toks[0]
	args := toks[1:]
	opens := len(args) > 0 && args[len(args)-1] == "{"
	if opens {
		args = args[:len(args)-1]
	}
	tail := ""
	if opens {
		tail = " {"
	}
	switch name {
	case "forward":
		if len(args) < 2 {
			break
		}
		r.note(file, "forward %s %s -> forward %s %s (stub upstream)", args[0], strings.Join(args[1:], " "), args[0], r.stub)
		return ind + "forward " + args[0] + " " + r.stub + tail, nil
	case "health", "ready", "prometheus":
		addr := httpDefaults[name]
		if len(args) > 0 {
			addr = args[0]
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return "", fmt.Errorf("%s: %s address %q: %w", file, name, addr, err)
		}
		p, err := r.port(r.httpPorts, port)
		if err != nil {
			return "", err
		}
		rest := ""
		if len(args) > 1 {
			rest = " " + strings.Join(args[1:], " ")
		}
		r.note(file, "%s %s -> %s 127.0.0.1:%d", name, addr, name, p)
		return fmt.Sprintf("%s%s 127.0.0.1:%d%s%s", ind, name, p, rest, tail), nil
	case "bind":
		r.note(file, "bind %s -> bind 127.0.0.1", strings.Join(args, " "))
		return ind + "bind 127.0.0.1" + tail, nil
	case "kubernetes":
		r.note(file, "kubernetes %s: endpoint %s added (the fake API server holding the case's Services and EndpointSlices)", strings.Join(args, " "), r.api)
		if opens {
			return ind + strings.Join(toks, " ") + "\n" + ind + "    endpoint " + r.api, nil
		}
		return ind + strings.Join(toks, " ") + " {\n" + ind + "    endpoint " + r.api + "\n" + ind + "}", nil
	}
	return r.paths(file, ind, toks, line), nil
}

// paths points absolute paths under the pod's mounts into the root; other lines stay as written.
func (r *rewriter) paths(file, ind string, toks []string, line string) string {
	changed := false
	for i, t := range toks {
		if full, ok := r.inRoot(t); ok {
			toks[i] = full
			changed = true
		}
	}
	if !changed && line != "" {
		return line
	}
	return ind + strings.Join(toks, " ")
}
