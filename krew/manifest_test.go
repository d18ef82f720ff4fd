// Package krew_test checks the krew plugin manifest that goreleaser writes from the `krews:`
// section of .goreleaser.yaml: krew-index's text rules here, on the configuration; and, in
// `make release-check` (build tag release, install_test.go), the manifest goreleaser wrote for
// the snapshot archives, installed with krew itself for every platform.
package krew_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// goreleaserConfig is the part of .goreleaser.yaml the krew manifest comes from.
type goreleaserConfig struct {
	Builds []struct {
		ID     string   `json:"id"`
		Binary string   `json:"binary"`
		Goos   []string `json:"goos"`
		Goarch []string `json:"goarch"`
	} `json:"builds"`
	Archives []struct {
		ID    string `json:"id"`
		Files []struct {
			Src string `json:"src"`
		} `json:"files"`
	} `json:"archives"`
	Krews []struct {
		Name             string   `json:"name"`
		IDs              []string `json:"ids"`
		Homepage         string   `json:"homepage"`
		ShortDescription string   `json:"short_description"`
		Description      string   `json:"description"`
		Caveats          string   `json:"caveats"`
	} `json:"krews"`
}

func readGoreleaser(t *testing.T) goreleaserConfig {
	t.Helper()
	raw, err := os.ReadFile("../.goreleaser.yaml")
	require.NoError(t, err)
	var g goreleaserConfig
	require.NoError(t, yaml.Unmarshal(raw, &g))
	require.Len(t, g.Builds, 1)
	require.Len(t, g.Archives, 1)
	require.Len(t, g.Krews, 1)
	return g
}

// Texts are the documentation fields of a krew manifest.
type Texts struct {
	Name, ShortDescription, Description, Caveats string
}

// safeName is krew's own rule for a plugin name (internal/index/validation.IsSafePluginName) and
// the naming guide's kebab-case.
var safeName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// usage matches text that tells how to run the plugin rather than what it does: a command line
// or a flag.
var usage = regexp.MustCompile("kubectl |`|(^|\\s)--?[a-z]")

// checkTexts applies krew-index's rules for the text of a manifest: the name per the naming
// guide; a shortDescription of at most 50 characters; a description that says what the plugin
// does, with no usage (krew's plugin-manifest guide: no commands or options, the plugin's --help
// has them) and lines within 80 columns; caveats within 80 columns too.
func checkTexts(t assert.TestingT, m Texts) {
	assert.Regexp(t, safeName, m.Name)
	assert.False(t, strings.HasPrefix(m.Name, "kube"), "the naming guide: no kube- prefix (kubectl already says it)")
	assert.LessOrEqual(t, utf8.RuneCountInString(m.ShortDescription), 50, "shortDescription %q", m.ShortDescription)
	assert.NotEmpty(t, m.ShortDescription)
	assert.False(t, strings.HasSuffix(m.ShortDescription, "."), "a tagline, not a sentence")
	for field, text := range map[string]string{"description": m.Description, "caveats": m.Caveats} {
		for i, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			assert.LessOrEqual(t, utf8.RuneCountInString(line), 80, "%s line %d is wider than 80 columns: %q", field, i+1, line)
		}
	}
	assert.NotRegexp(t, usage, m.Description, "the description says what the plugin does, not how to run it")
	assert.NotContains(t, m.Description, m.ShortDescription, "the description does more than repeat the tagline")
	assert.GreaterOrEqual(t, len(strings.Fields(m.Description)), 30, "the description explains the plugin")
}

func TestTheKrewConfigurationMeetsKrewIndexRules(t *testing.T) {
	g := readGoreleaser(t)
	k := g.Krews[0]
	checkTexts(t, Texts{Name: k.Name, ShortDescription: k.ShortDescription, Description: k.Description, Caveats: k.Caveats})
	// krew links kubectl-<name> to the binary: the krew name is the binary's, so a krew
	// install and a manual one are the same command and file, as the plugin's help prints it.
	assert.Equal(t, g.Builds[0].Binary, "kubectl-"+k.Name)
	assert.Equal(t, []string{g.Archives[0].ID}, k.IDs, "the manifest lists the release archives")
	assert.Equal(t, "https://github.com/lanaccess/kubectl-lanaccess", k.Homepage)
}

func TestEveryArchiveCarriesTheLicense(t *testing.T) {
	g := readGoreleaser(t)
	srcs := make([]string, 0, len(g.Archives[0].Files))
	for _, f := range g.Archives[0].Files {
		srcs = append(srcs, f.Src)
	}
	assert.Contains(t, srcs, "LICENSE")
	_, err := os.Stat("../LICENSE")
	require.NoError(t, err)
}

// The text rules can fail: a manifest that breaks each of them.
func TestCheckTextsCatchesEachRule(t *testing.T) {
	good := Texts{Name: "lanaccess", ShortDescription: "Diagnose LAN access to Services and OpenVPN pods",
		Description: strings.Repeat("Finds which layer breaks access from a LAN to services.\n", 6)}
	for name, edit := range map[string]func(*Texts){
		"camelCase name":         func(m *Texts) { m.Name = "lanAccess" },
		"kube- prefix":           func(m *Texts) { m.Name = "kube-lanaccess" },
		"long shortDescription":  func(m *Texts) { m.ShortDescription = "Diagnose LAN access via externalIPs and OpenVPN pods" },
		"wide description":       func(m *Texts) { m.Description += strings.Repeat("x", 81) + "\n" },
		"usage in description":   func(m *Texts) { m.Description += "Run kubectl lanaccess doctor.\n" },
		"a flag in description":  func(m *Texts) { m.Description += "With --no-helpers it is read-only.\n" },
		"wide caveats":           func(m *Texts) { m.Caveats = strings.Repeat("y", 81) },
		"tagline as description": func(m *Texts) { m.Description = m.ShortDescription + "\n" + m.Description },
		"one-line description":   func(m *Texts) { m.Description = "Diagnoses.\n" },
		"a sentence for tagline": func(m *Texts) { m.ShortDescription = "Diagnose LAN access." },
	} {
		t.Run(name, func(t *testing.T) {
			m := good
			edit(&m)
			var r recorder
			checkTexts(&r, m)
			assert.True(t, r.failed, "%+v passes", m)
		})
	}
	var r recorder
	checkTexts(&r, good)
	assert.False(t, r.failed, "%v", r.msgs)
}

// recorder is an assert.TestingT that keeps the failures.
type recorder struct {
	failed bool
	msgs   []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

// krew links only the plugin's binary (krew#812), so the caveats, the only text a krew user
// sees, say how to put the completion helper on PATH, on Unix and on Windows; the archive
// carries both helpers, the Windows one with an extension PATHEXT lists (kubectl finds the
// helper with exec.LookPath: k8s.io/kubectl pkg/cmd/plugin/plugin_completion.go).
func TestTheCaveatsSayHowToEnableCompletion(t *testing.T) {
	g := readGoreleaser(t)
	caveats := g.Krews[0].Caveats
	assert.Contains(t, caveats, "install -m 0755 \"$k\"/store/lanaccess/*/kubectl_complete-lanaccess \"$k/bin/\"")
	assert.Contains(t, caveats, "kubectl_complete-lanaccess.cmd")
	srcs := map[string]bool{}
	for _, f := range g.Archives[0].Files {
		srcs[f.Src] = true
	}
	for _, helper := range []string{"cmd/kubectl_complete-lanaccess/kubectl_complete-lanaccess", "cmd/kubectl_complete-lanaccess/kubectl_complete-lanaccess.cmd"} {
		assert.True(t, srcs[helper], "the archive carries %s", helper)
		_, err := os.Stat("../" + helper)
		require.NoError(t, err)
	}
	raw, err := os.ReadFile("../cmd/kubectl_complete-lanaccess/kubectl_complete-lanaccess.cmd")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\r\n"), "\r\n")
	assert.Equal(t, "@echo off", lines[0], "cmd.exe echoes nothing into the completions")
	assert.Equal(t, "kubectl-lanaccess __complete %*", lines[len(lines)-1], "every argument goes to cobra's __complete")
	assert.NotContains(t, strings.ReplaceAll(string(raw), "\r\n", ""), "\n", "CRLF line ends, as cmd.exe expects")
}
