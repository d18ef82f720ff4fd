package monitor_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"mvdan.cc/sh/v3/syntax"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/cmd/kubectl-lanaccess/internal/cli"
	"github.com/lanaccess/kubectl-lanaccess/cmd/kubectl-lanaccess/internal/monitor"
	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
)

// The monitor's manifests are tested against the real tools that read them: promtool (the
// Prometheus module's own, built from the module proxy at a pinned version) checks the rules and
// runs their unit tests and parses every query of the dashboard; systemd-analyze verifies the
// unit; the plugin's own flag parser reads the command lines of the unit and the container.

// prometheusVersion is the Go module version of github.com/prometheus/prometheus whose promtool
// the tests run (Prometheus v3.16).
const prometheusVersion = "v0.316.0"

// promtool returns promtool's path: $PROMTOOL, else the copy built once into the user cache
// (`make test-unit` builds it first; a cold build takes minutes).
var promtool = sync.OnceValues(func() (string, error) {
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "kubectl-lanaccess", "tools", "prometheus-"+prometheusVersion)
	bin := filepath.Join(dir, "promtool")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	cmd := exec.Command("go", "install", "github.com/prometheus/prometheus/cmd/promtool@"+prometheusVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &exec.Error{Name: "go install promtool@" + prometheusVersion + ": " + string(out), Err: err}
	}
	return bin, nil
})

func runPromtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	bin, err := promtool()
	require.NoError(t, err, "promtool is needed to test the monitor's rules (set PROMTOOL or let the test build it)")
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

func manifest(t *testing.T, name string) []byte {
	t.Helper()
	b, err := manifests.Get(name)
	require.NoError(t, err)
	return b
}

func TestMonitorRulesPassPromtoolChecksAndUnitTests(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), manifest(t, "monitor-rules"), 0o600))
	tests, err := os.ReadFile("testdata/monitor-rules.test.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.test.yaml"), tests, 0o600))
	out := runPromtool(t, dir, "check", "rules", "--lint=all", "--lint-fatal", "rules.yaml")
	assert.Contains(t, out, "SUCCESS: 8 rules found")
	out = runPromtool(t, dir, "test", "rules", "rules.test.yaml")
	assert.Contains(t, out, "SUCCESS")
	// Every alert the rules define is exercised by a unit test.
	var rules ruleFile
	require.NoError(t, yaml.UnmarshalStrict(manifest(t, "monitor-rules"), &rules))
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			assert.Contains(t, string(tests), "alertname: "+r.Alert, "no unit test of %s", r.Alert)
		}
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

func TestThePrometheusRuleCarriesExactlyTheRulesOfTheRuleFile(t *testing.T) {
	var file map[string]any
	require.NoError(t, yaml.Unmarshal(manifest(t, "monitor-rules"), &file))
	var pr struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       map[string]any `json:"spec"`
	}
	require.NoError(t, yaml.UnmarshalStrict(manifest(t, "monitor-prometheusrule"), &pr))
	assert.Equal(t, "monitoring.coreos.com/v1", pr.APIVersion)
	assert.Equal(t, "PrometheusRule", pr.Kind)
	assert.NotEmpty(t, pr.Metadata["name"])
	assert.Equal(t, file, pr.Spec, "spec is the rule file's groups, nothing more")
}

// metricRef finds the monitor's metric names in a PromQL expression.
var metricRef = regexp.MustCompile(`\blanaccess_[a-z0-9_]+`)

// assertKnownMetrics fails for a lanaccess_* name the monitor does not serve (a histogram's
// _bucket, _sum and _count series are its own).
func assertKnownMetrics(t *testing.T, where, expr string) {
	t.Helper()
	known := monitor.MetricNames()
	for _, name := range metricRef.FindAllString(expr, -1) {
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(known, b) {
				base = b
			}
		}
		assert.Contains(t, known, base, "%s uses %s, which the monitor does not serve", where, name)
	}
	for _, kind := range regexp.MustCompile(`kind="([^"]+)"`).FindAllStringSubmatch(expr, -1) {
		assert.Contains(t, monitor.Kinds, monitor.Kind(kind[1]), "%s: no probe kind %q", where, kind[1])
	}
}

func TestTheRulesUseOnlyMetricsTheMonitorServes(t *testing.T) {
	var rules ruleFile
	require.NoError(t, yaml.UnmarshalStrict(manifest(t, "monitor-rules"), &rules))
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			assertKnownMetrics(t, r.Alert, r.Expr)
		}
	}
}

// dashboard is the part of Grafana's dashboard model the tests read.
type dashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Repeat  string `json:"repeat"`
	GridPos struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Datasource map[string]string `json:"datasource"`
	Targets    []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
}

// rows groups the panels under the row panel above them (Grafana's model for rows that are not
// collapsed: a row owns the panels that follow it, up to the next row).
func (d dashboard) rows() map[string][]panel {
	out := map[string][]panel{}
	current := ""
	for _, p := range d.Panels {
		if p.Type == "row" {
			current = p.Title
			continue
		}
		out[current] = append(out[current], p)
	}
	return out
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw := manifest(t, "monitor-dashboard")
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(raw))
	require.NoError(t, dec.Decode(&d))
	return d
}

func TestTheDashboardHasOneRowPerAddressAndTheCheckTable(t *testing.T) {
	d := loadDashboard(t)
	assert.Equal(t, "lanaccess-monitor", d.UID)
	assert.GreaterOrEqual(t, d.SchemaVersion, 36, "datasource references as objects")
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	assert.Equal(t, map[string]string{"datasource": "datasource", "instance": "query", "address": "query"}, vars)

	var repeated *panel
	ids := map[int]bool{}
	for i, p := range d.Panels {
		assert.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		assert.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "%s is wider than the grid", p.Title)
		assert.Positive(t, p.GridPos.H, p.Title)
		if p.Repeat != "" {
			repeated = &d.Panels[i]
		}
		if p.Type != "row" {
			assert.Equal(t, "${datasource}", p.Datasource["uid"], "%s uses the dashboard's datasource variable", p.Title)
		}
	}
	require.NotNil(t, repeated, "a row repeated per address")
	assert.Equal(t, "address", repeated.Repeat)
	assert.Contains(t, repeated.Title, "$address")
	row := d.rows()[repeated.Title]
	titles := make([]string, 0, len(row))
	for _, p := range row {
		titles = append(titles, p.Title)
		for _, tgt := range p.Targets {
			assert.Contains(t, tgt.Expr, `address="$address"`, "%s in the address row queries its address", p.Title)
		}
	}
	assert.Equal(t, []string{"DNS", "HTTPS", "TLS handshake", "Certificate days left"}, titles)
	var checks *panel
	for _, p := range d.rows()["Overview"] {
		if p.Type == "table" {
			checks = &p
		}
	}
	require.NotNil(t, checks, "the check table")
	assert.Contains(t, checks.Targets[0].Expr, "lanaccess_check_status")
}

// TestEveryDashboardQueryParsesAndUsesServedMetrics gives promtool each query, with Grafana's
// variables replaced as Grafana replaces them, to parse as PromQL.
func TestEveryDashboardQueryParsesAndUsesServedMetrics(t *testing.T) {
	d := loadDashboard(t)
	vars := strings.NewReplacer("$instance", "ws-1:9877", "$address", "10.0.10.11", "$__rate_interval", "1m")
	dir := t.TempDir()
	n := 0
	for _, p := range d.Panels {
		for _, tgt := range p.Targets {
			assertKnownMetrics(t, p.Title, tgt.Expr)
			runPromtool(t, dir, "promql", "format", "--experimental", vars.Replace(tgt.Expr))
			n++
		}
	}
	assert.GreaterOrEqual(t, n, 11)
}

// commandOf returns the words of the first command in a shell script that runs name.
func commandOf(t *testing.T, script []byte, name string) []string {
	t.Helper()
	f, err := syntax.NewParser().Parse(bytes.NewReader(script), "")
	require.NoError(t, err)
	var words []string
	syntax.Walk(f, func(node syntax.Node) bool {
		call, ok := node.(*syntax.CallExpr)
		if !ok || len(words) > 0 || len(call.Args) == 0 || call.Args[0].Lit() != name {
			return true
		}
		for _, w := range call.Args {
			words = append(words, w.Lit())
		}
		return false
	})
	require.NotEmpty(t, words, "no %s command", name)
	return words
}

// assertMonitorCommandParses runs the plugin's flag parser on a monitor command line.
func assertMonitorCommandParses(t *testing.T, args []string) {
	t.Helper()
	require.Equal(t, "monitor", args[0])
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	root := cli.NewRootCommand(streams)
	cmd, rest, err := root.Find(args)
	require.NoError(t, err)
	require.Equal(t, "monitor", cmd.Name())
	require.NoError(t, cmd.ParseFlags(rest), "%v", args)
	assert.Empty(t, cmd.Flags().Args(), "%v", args)
}

func TestTheSystemdUnitVerifiesAndRunsAMonitorCommand(t *testing.T) {
	unit := manifest(t, "monitor-systemd")
	var execStart []string
	for line := range strings.SplitSeq(string(unit), "\n") {
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			execStart = strings.Fields(v)
		}
	}
	require.NotEmpty(t, execStart)
	assert.Equal(t, "/usr/local/bin/kubectl-lanaccess", execStart[0], "where `make install` puts it")
	assertMonitorCommandParses(t, execStart[1:])

	// systemd's own verifier; the binary must exist for it, so the copy points at one that does.
	analyze, err := exec.LookPath("systemd-analyze")
	require.NoError(t, err, "systemd-analyze (Debian package systemd) verifies the unit")
	dir := t.TempDir()
	path := filepath.Join(dir, "kubectl-lanaccess-monitor.service")
	self, err := os.Executable()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, bytes.ReplaceAll(unit, []byte(execStart[0]), []byte(self)), 0o600))
	cmd := exec.Command(analyze, "verify", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	assert.Empty(t, stderr.String(), "systemd-analyze verify has something to say about the unit")
}

func TestTheContainerCommandParsesAndRunsAMonitorCommand(t *testing.T) {
	script := manifest(t, "monitor-container")
	words := commandOf(t, script, "docker")
	image := slices.IndexFunc(words, func(w string) bool { return strings.HasPrefix(w, "ghcr.io/lanaccess/kubectl-lanaccess:") })
	require.Positive(t, image, "the plugin's image: %v", words)
	assert.Equal(t, "run", words[1])
	assert.Contains(t, words, "--network", "the probes leave from the LAN machine")
	assertMonitorCommandParses(t, words[image+1:])

	// Docker's own client knows its flags (its help needs no daemon).
	docker, err := exec.LookPath("docker")
	require.NoError(t, err, "the docker client checks the run line's flags")
	help, err := exec.Command(docker, "run", "--help").CombinedOutput()
	require.NoError(t, err, "%s", help)
	for _, w := range words[2:image] {
		if flag, ok := strings.CutPrefix(w, "--"); ok {
			assert.Regexp(t, `(?m)^\s+(-\w, )?--`+regexp.QuoteMeta(flag)+`\b`, string(help), "docker run has no --%s", flag)
		}
	}
}
