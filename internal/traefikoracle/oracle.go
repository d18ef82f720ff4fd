// Package traefikoracle reads testdata/traefik-forwardauth.json: what Traefik's forwardAuth
// middleware gives the browser for an auth server's answer, each case proven against the lab's
// real Traefik (lab/e2e traefik_forwardauth_test.go, Traefik of lab/versions.env). LA401's unit
// tests, whose stand-in proxies play Traefik, answer from it instead of guessing.
package traefikoracle

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"
)

// Answer is an HTTP answer: the auth server's, or the browser's through Traefik.
type Answer struct {
	Status   int    `json:"status"`
	Location string `json:"location"`
}

// Case is one proven case. A patched case (PatchOf) has its base's forwardAuth with the patch's
// spec.forwardAuth fields set, once read by Load.
type Case struct {
	Name        string         `json:"name"`
	ForwardAuth map[string]any `json:"forwardAuth"`
	PatchOf     string         `json:"patchOf"`
	Patch       map[string]any `json:"patch"`
	Auth        Answer         `json:"auth"`
	Browser     Answer         `json:"browser"`
}

// ForwardAuth is what of a Middleware's spec.forwardAuth shapes the browser's answer.
type ForwardAuth struct {
	Address                string
	PreserveLocationHeader bool
	AuthSigninURL          string
}

// Cases are the oracle's cases.
type Cases []Case

// Load reads the cases file and resolves its patched cases. The file's patches touch
// spec.forwardAuth only (the oracle applies them as full RFC 7386 merge patches); another patch
// is refused rather than half applied.
func Load(path string) (Cases, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var file struct {
		Cases Cases `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(file.Cases) == 0 {
		return nil, fmt.Errorf("%s has no cases", path)
	}
	for i, c := range file.Cases {
		if c.PatchOf == "" {
			continue
		}
		base, ok := file.Cases.Named(c.PatchOf)
		if !ok || base.PatchOf != "" {
			return nil, fmt.Errorf("%s: case %s patches %q, which is not an unpatched case", path, c.Name, c.PatchOf)
		}
		spec, _ := c.Patch["spec"].(map[string]any)
		fa, ok := spec["forwardAuth"].(map[string]any)
		if !ok || len(spec) != 1 || len(c.Patch) != 1 {
			return nil, fmt.Errorf("%s: case %s: a patch of spec.forwardAuth only", path, c.Name)
		}
		file.Cases[i].ForwardAuth = maps.Clone(base.ForwardAuth)
		maps.Copy(file.Cases[i].ForwardAuth, fa)
	}
	return file.Cases, nil
}

// Named returns the case called name.
func (cs Cases) Named(name string) (Case, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c, true
		}
	}
	return Case{}, false
}

// Gives is what Traefik gives the browser when its forwardAuth is fa and the auth server
// answers auth: the browser answer of the case of that forwardAuth and auth answer, false when
// no case proves it.
func (cs Cases) Gives(fa ForwardAuth, auth Answer) (Answer, bool) {
	for _, c := range cs {
		if c.Auth == auth && c.Of() == fa {
			return c.Browser, true
		}
	}
	return Answer{}, false
}

// Of is the case's forwardAuth as Gives compares it.
func (c Case) Of() ForwardAuth {
	addr, _ := c.ForwardAuth["address"].(string)
	keep, _ := c.ForwardAuth["preserveLocationHeader"].(bool)
	signin, _ := c.ForwardAuth["authSigninURL"].(string)
	return ForwardAuth{Address: addr, PreserveLocationHeader: keep, AuthSigninURL: signin}
}

// TraefikVersion is TRAEFIK_VERSION of the lab's versions file (lab/versions.env): the Traefik
// the lab builds and runs, which proved the cases.
func TraefikVersion(versionsEnv string) (string, error) {
	data, err := os.ReadFile(versionsEnv)
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "TRAEFIK_VERSION="); ok && v != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s has no TRAEFIK_VERSION", versionsEnv)
}

// TraefikModule is the module of Traefik's code.
const TraefikModule = "github.com/traefik/traefik/v3"
