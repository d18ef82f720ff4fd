package config

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// A Corefile fix is printed as the whole new content of the ConfigMap key that holds the file
// to change (the Corefile, or the imported file the block lives in: k3s's coredns-custom), in
// a merge patch built by remedy: what is printed is exactly what a test applies, reloads in
// the real CoreDNS and checks again. A comment before it says what changes, in Corefile text.

// podFile is one file of the DNS pods that a fix changes, and the ConfigMap key it comes from.
type podFile struct {
	// Path is its pod path ("" for the -conf file).
	Path string
	CM   *corev1.ConfigMap
	Key  string
	Text string
}

// corefileSource finds the ConfigMap key behind a file of the Corefile ("" is the -conf file).
func corefileSource(s *kube.Setup, path string) (podFile, bool) {
	if path == "" || path == s.CorefileConf {
		if s.ConfigMap == nil || s.CorefileKey == "" {
			return podFile{}, false
		}
		return podFile{CM: s.ConfigMap, Key: s.CorefileKey, Text: s.ConfigMap.Data[s.CorefileKey]}, true
	}
	if s.Corefile == nil {
		return podFile{}, false
	}
	f, ok := s.Corefile.Files().Read(path)
	if !ok {
		return podFile{}, false
	}
	cm, ok := f.Source.(*corev1.ConfigMap)
	if !ok {
		return podFile{}, false
	}
	return podFile{Path: path, CM: cm, Key: f.Key, Text: f.Content}, true
}

// corefileEdit is one change of one file.
type corefileEdit struct {
	file podFile
	// What says what changes ("add after line 8"); Lines are the lines it adds or writes.
	What  string
	Lines string
	text  string
}

// Text is the file's content after the change.
func (e corefileEdit) Text() string { return e.text }

// Remediation is the comment and the merge patch, after the note of the tool that renders the
// ConfigMap when one does (its next upgrade or sync sets a direct patch back).
func (e corefileEdit) Remediation() string {
	cm := e.file.CM
	var b strings.Builder
	b.WriteString(kube.ManagedNote(cm, "ConfigMap", "data."+e.file.Key))
	// every value read from the cluster stays inside its comment (remedy.Comment)
	head := fmt.Sprintf("%s key %s: %s", kubeobj.ConfigMapRef(cm), e.file.Key, e.What)
	if e.Lines != "" {
		head += ":"
	}
	b.WriteString(remedy.Comment(head) + "\n")
	if e.Lines != "" {
		b.WriteString(commented(strings.TrimRight(e.Lines, "\n")) + "\n")
	}
	b.WriteString(remedy.MergePatch(cm.Namespace, "configmap", cm.Name, map[string]any{"data": map[string]string{e.file.Key: e.text}}))
	return b.String()
}

// lines splits a file's text the way caddy's lexer counts its lines.
func lines(text string) []string { return strings.Split(text, "\n") }

// indentOf is the leading white space of line n (1-based) of text.
func indentOf(text string, n int) string {
	ls := lines(text)
	if n < 1 || n > len(ls) {
		return ""
	}
	l := ls[n-1]
	return l[:len(l)-len(strings.TrimLeft(l, " \t"))]
}

// indent prefixes every line of snippet.
func indent(snippet, prefix string) string {
	var out []string
	for l := range strings.SplitSeq(strings.TrimRight(snippet, "\n"), "\n") {
		out = append(out, prefix+l)
	}
	return strings.Join(out, "\n")
}

// insertAfter adds snippet (already indented) after line n (0: at the top).
func insertAfter(f podFile, n int, snippet, what string) corefileEdit {
	ls := lines(f.Text)
	if n > len(ls) {
		n = len(ls)
	}
	out := append(append(append([]string{}, ls[:n]...), strings.Split(snippet, "\n")...), ls[n:]...)
	return corefileEdit{file: f, What: what, Lines: snippet, text: strings.Join(out, "\n")}
}

// replaceLines writes snippet in place of lines from..to (1-based, inclusive).
func replaceLines(f podFile, from, to int, snippet, what string) corefileEdit {
	ls := lines(f.Text)
	var repl []string
	if snippet != "" {
		repl = strings.Split(snippet, "\n")
	}
	out := append(append(append([]string{}, ls[:from-1]...), repl...), ls[to:]...)
	return corefileEdit{file: f, What: what, Lines: snippet, text: strings.Join(out, "\n")}
}

// appendBlock adds a server block at the end of the file.
func appendBlock(f podFile, block, what string) corefileEdit {
	text := strings.TrimRight(f.Text, "\n") + "\n" + block + "\n"
	return corefileEdit{file: f, What: what, Lines: block, text: text}
}

// blockIndent is the indentation of the block's plugins (four spaces when it has none).
func blockIndent(f podFile, b *corefile.ServerBlock) string {
	for _, p := range b.Plugins {
		if p.File == b.File {
			return indentOf(f.Text, p.Line)
		}
	}
	return indentOf(f.Text, b.Line) + "    "
}

// commented writes Corefile lines as shell comments, so a remediation stays a shell script
// (remedy.Comment: a control character of a line cannot end its comment).
func commented(snippet string) string {
	var out []string
	for l := range strings.SplitSeq(snippet, "\n") {
		out = append(out, remedy.Comment("  "+l))
	}
	return strings.Join(out, "\n")
}
