// Package remedy builds the commands and configuration snippets that findings print for people
// to paste: one home for each snippet (edit the Corefile's ConfigMap, the zone template, the
// NODATA catch-all, the forwarding block, a rollout restart, a JSON patch), and every value that
// goes into a shell word is quoted here with a shell parser's own quoting (mvdan.cc/sh), never
// by string concatenation.
package remedy

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"mvdan.cc/sh/v3/syntax"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// safeWord is a word every common shell (sh, bash, zsh) reads literally without quotes: no
// globbing, expansion or syntax character, no leading "~" (tilde expansion) or "=" (zsh's
// equals expansion).
var safeWord = regexp.MustCompile(`^[A-Za-z0-9_@%+:,./-][A-Za-z0-9_@%+=:,./-]*$`)

// Quote makes s one literal word for a POSIX shell (bash, zsh, dash read it the same): as is
// when it is safe, else quoted by the shell parser's own quoting.
func Quote(s string) string {
	if safeWord.MatchString(s) {
		return s
	}
	q, err := syntax.Quote(s, syntax.LangPOSIX)
	if err != nil {
		// Only strings with NUL bytes cannot be quoted: no shell word can hold one.
		return "'" + strings.ReplaceAll(strings.ReplaceAll(s, "\x00", ""), "'", `'"'"'`) + "'"
	}
	return q
}

// Command joins words into one command line, quoting each argument as needed. Words that are
// meant as shell syntax (a pipe, a comment) do not belong here: append them after.
func Command(words ...string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = Quote(w)
	}
	return strings.Join(out, " ")
}

// Kubectl is `kubectl -n NS ARGS...` (no -n when ns is "").
func Kubectl(ns string, args ...string) string {
	words := []string{"kubectl"}
	if ns != "" {
		words = append(words, "-n", ns)
	}
	return Command(append(words, args...)...)
}

// JSONPatch is `kubectl -n NS patch KIND NAME --type=json -p 'OPS'` with ops marshalled.
func JSONPatch(ns, kind, name string, ops ...PatchOp) string {
	b, err := json.Marshal(ops)
	if err != nil {
		panic(err) // PatchOp values always marshal
	}
	return Kubectl(ns, "patch", kind, name, "--type=json", "-p", string(b))
}

// PatchOp is one RFC 6902 operation.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// MergePatch is `kubectl -n NS patch KIND NAME --type=merge -p 'PATCH'` with patch marshalled.
func MergePatch(ns, kind, name string, patch any) string {
	b, err := json.Marshal(patch)
	if err != nil {
		panic(err)
	}
	return Kubectl(ns, "patch", kind, name, "--type=merge", "-p", string(b))
}

// EditConfigMap opens the ConfigMap that holds the Corefile ("" names a placeholder).
func EditConfigMap(ns, name string) string {
	if name == "" {
		return "kubectl -n <namespace> edit configmap <corefile configmap>"
	}
	return Kubectl(ns, "edit", "configmap", name)
}

// RolloutRestart restarts a Deployment's pods ("" names a placeholder).
func RolloutRestart(ns, deployment string) string {
	if deployment == "" {
		return "kubectl -n " + Quote(ns) + " rollout restart deployment/<dns deployment>"
	}
	return Kubectl(ns, "rollout", "restart", "deployment/"+deployment)
}

// ZoneTemplate is the zone's `template IN A` answering exactly addrs (IPv4 only: CoreDNS
// fails every A query of the zone when an answer is not an A record), plus the AAAA template
// when IPv6 addresses are given.
func ZoneTemplate(addrs []netip.Addr) string {
	var b strings.Builder
	var v4, v6 []netip.Addr
	for _, a := range addrs {
		if a.Unmap().Is4() {
			v4 = append(v4, a.Unmap())
		} else {
			v6 = append(v6, a)
		}
	}
	if len(v4) > 0 {
		b.WriteString("template IN A {\n")
		for _, a := range v4 {
			fmt.Fprintf(&b, "    answer \"{{ .Name }} 60 IN A %s\"\n", a)
		}
		b.WriteString("}")
	}
	if len(v6) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("template IN AAAA {\n")
		for _, a := range v6 {
			fmt.Fprintf(&b, "    answer \"{{ .Name }} 60 IN AAAA %s\"\n", a)
		}
		b.WriteString("}")
	}
	return b.String()
}

// CatchAll is the seed's NODATA entry: every other type of the zone answers NOERROR, empty.
const CatchAll = "template ANY ANY {\n    rcode NOERROR\n}"

// DotBlock is a "." server block on port that forwards names outside the zone to the
// resolvers the pod inherits (dnsPolicy Default: the node's).
func DotBlock(port string) string {
	return fmt.Sprintf(".:%s {\n    errors\n    reload\n    cache 30\n    forward . /etc/resolv.conf\n}", port)
}

// ZoneBlock is the seed's zone server block on port answering addrs.
func ZoneBlock(z zone.Zone, port string, addrs []netip.Addr) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%s {\n    errors\n    reload\n", z, port)
	for line := range strings.SplitSeq(ZoneTemplate(addrs), "\n") {
		b.WriteString("    " + line + "\n")
	}
	for line := range strings.SplitSeq(CatchAll, "\n") {
		b.WriteString("    " + line + "\n")
	}
	b.WriteString("}")
	return b.String()
}

// Apply is `kubectl apply -f - <<'EOF' ... EOF` around manifest (YAML built by a marshaller).
func Apply(manifest string) string {
	return "kubectl apply -f - <<'EOF'\n" + strings.TrimRight(manifest, "\n") + "\nEOF"
}

// YAML renders Kubernetes objects (typed or maps) as one multi-document YAML stream with a
// marshaller, never by concatenating values into text. The empty fields the API types always
// carry (creationTimestamp: null, status: {}) are dropped so the output reads as a manifest.
func YAML(objs ...any) string {
	docs := make([]string, 0, len(objs))
	for _, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			panic(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			panic(err)
		}
		prune(m)
		b, err := yaml.Marshal(m)
		if err != nil {
			panic(err)
		}
		docs = append(docs, strings.TrimRight(string(b), "\n"))
	}
	return strings.Join(docs, "\n---\n")
}

// prune removes nulls and empty maps, recursively.
func prune(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(x)
			if len(x) == 0 {
				delete(m, k)
			}
		case []any:
			for _, e := range x {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		}
	}
}

// PowerShellQuote makes s one literal PowerShell string: single-quoted, where the only special
// characters are the single quotes, which PowerShell recognises in four Unicode forms besides
// the ASCII one (about_Quoting_Rules); each is doubled.
func PowerShellQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case '\'', '\u2018', '\u2019', '\u201a', '\u201b':
			b.WriteRune(r)
		}
		b.WriteRune(r)
	}
	b.WriteByte('\'')
	return b.String()
}

// Comment is a one-line shell comment ("# " + text) with every control character of text
// written as a Go escape: a newline in a value read from a cluster (a quoted Corefile token
// may hold one) would otherwise end the comment and start a command.
func Comment(text string) string {
	return "# " + escapeControls(text)
}

// Commentf is a comment of one or more lines: format is the project's own text, each of its
// lines a "# " comment, and every argument is printed with its control characters escaped, so
// that no value (a name, an annotation, an image read from a cluster) can end a line.
// internal/archtest refuses comment lines of fixes built any other way.
func Commentf(format string, args ...any) string {
	safe := make([]any, len(args))
	for i, a := range args {
		switch a.(type) {
		case int, int32, int64, uint16, uint32, uint64, bool, float64:
			safe[i] = a
		default:
			safe[i] = escapeControls(fmt.Sprint(a))
		}
	}
	return fmt.Sprintf(format, safe...)
}

func escapeControls(text string) string {
	var b strings.Builder
	for _, r := range text {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
