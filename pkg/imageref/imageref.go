// Package imageref parses container image references fully written out: a registry, a
// repository, and a tag or a digest (registry.example:5000/team/app:v1, ghcr.io/x/y@sha256:...).
// It follows the grammar of the distribution project's reference package
// (github.com/distribution/reference, regexp.go: domain, path components, tag, digest), with no
// defaulting: the registry and the tag or digest must be given, as go-containerregistry's
// name.StrictValidation requires. A reference it accepts holds no whitespace, quote, '#' or
// other character that could leave an unquoted YAML scalar.
package imageref

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
)

// Ref is a parsed image reference.
type Ref struct {
	// Registry is the host, with its port when given (ghcr.io, registry.lan:5000, [::1]:5000).
	Registry string
	// Repository is the path under the registry (lanaccess/kubectl-lanaccess).
	Repository string
	// Tag and Digest: at least one is set.
	Tag    string
	Digest string
}

// String is the reference as written: registry/repository[:tag][@digest].
func (r Ref) String() string {
	s := r.Registry + "/" + r.Repository
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// The distribution grammar (distribution/reference regexp.go), anchored piece by piece.
const (
	alnum      = `[a-z0-9]+`
	separator  = `(?:[._]|__|[-]+)`
	pathComp   = alnum + `(?:` + separator + alnum + `)*`
	domainComp = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	domainName = domainComp + `(?:\.` + domainComp + `)*`
	ipv6       = `\[(?:[a-fA-F0-9:]+)\]`
	port       = `:[0-9]+`
	tagPattern = `[\w][\w.-]{0,127}`
	// The algorithms opencontainers/go-digest registers, as go-containerregistry validates them.
	digestPattern = `(?:sha256:[a-f0-9]{64}|sha384:[a-f0-9]{96}|sha512:[a-f0-9]{128})`
	maxNameTotal  = 255
)

// grammar is the compiled grammar, built on first use: compiling it (the tag's {0,127} above
// all) cost every command 0.5 ms and 250 KB at start-up (GODEBUG=inittrace=1), most of which
// never read an image reference.
var grammar = sync.OnceValue(func() refGrammar {
	return refGrammar{
		domain: regexp.MustCompile(`^(?:` + domainName + `|` + ipv6 + `)(?:` + port + `)?$`),
		ipv6:   regexp.MustCompile(`^\[([^\]]*)\]`),
		path:   regexp.MustCompile(`^` + pathComp + `(?:/` + pathComp + `)*$`),
		tag:    regexp.MustCompile(`^` + tagPattern + `$`),
		digest: regexp.MustCompile(`^` + digestPattern + `$`),
	}
})

type refGrammar struct{ domain, ipv6, path, tag, digest *regexp.Regexp }

// Parse reads a fully written reference; the error says which part is wrong.
func Parse(s string) (Ref, error) {
	var r Ref
	rest := s
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		rest, r.Digest = rest[:i], rest[i+1:]
		if !grammar().digest.MatchString(r.Digest) {
			return Ref{}, fmt.Errorf("invalid digest %q (sha256:, sha384: or sha512: and its lowercase hex)", r.Digest)
		}
	}
	// The tag follows the last ':' after the last '/' (a registry's port comes before a '/').
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		rest, r.Tag = rest[:i], rest[i+1:]
		if !grammar().tag.MatchString(r.Tag) {
			return Ref{}, fmt.Errorf("invalid tag %q (letters, digits, '_', '.', '-'; at most 128)", r.Tag)
		}
	}
	if r.Tag == "" && r.Digest == "" {
		return Ref{}, fmt.Errorf("%q names no tag or digest: write it out (e.g. :v1.2.3)", s)
	}
	registry, repo, ok := strings.Cut(rest, "/")
	if !ok || registry != "localhost" && !strings.ContainsAny(registry, ".:") {
		return Ref{}, fmt.Errorf("%q names no registry: write it out (e.g. docker.io/library/busybox)", s)
	}
	if !grammar().domain.MatchString(registry) || !validIPv6(registry) {
		return Ref{}, fmt.Errorf("invalid registry %q (a host name or [IPv6], with an optional :port)", registry)
	}
	if len(rest) > maxNameTotal {
		return Ref{}, fmt.Errorf("image name longer than %d characters", maxNameTotal)
	}
	if !grammar().path.MatchString(repo) {
		return Ref{}, fmt.Errorf("invalid repository %q (lowercase letters, digits and separators '.', '_', '__', '-', between '/')", repo)
	}
	if (registry == "docker.io" || registry == "index.docker.io") && !strings.Contains(repo, "/") {
		return Ref{}, fmt.Errorf("%q: Docker Hub's official images are under library/ (docker.io/library/%s)", s, repo)
	}
	r.Registry, r.Repository = registry, repo
	return r, nil
}

// validIPv6 reports whether a registry written [address] holds an IPv6 address (the grammar
// alone lets "[:]" through).
func validIPv6(registry string) bool {
	m := grammar().ipv6.FindStringSubmatch(registry)
	if m == nil {
		return true // not an IPv6 literal
	}
	ip := net.ParseIP(m[1])
	return ip != nil && strings.Contains(m[1], ":")
}
