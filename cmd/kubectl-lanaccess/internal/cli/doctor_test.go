package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
)

const fixtures = "../../../../testdata/fixtures"

// fixtureClients serves the named fixture directories through fake clientsets, with every
// permission granted.
func fixtureClients(t *testing.T, dirs ...string) clientFactory {
	t.Helper()
	objs, err := fixture.Load(dirs...)
	require.NoError(t, err)
	return func(*kubeFlags, time.Duration) (*clients, error) {
		typed, dyn, err := fixture.Clients(objs)
		if err != nil {
			return nil, err
		}
		fixture.ReactAccess(typed, func(authorizationv1.ResourceAttributes) bool { return true })
		return &clients{
			config: &rest.Config{Host: "https://fixture.invalid"}, typed: clientgo.Wrap(typed), dynamic: dyn,
			cluster: report.Cluster{Context: "fixture", Server: "https://fixture.invalid"}, warnings: &kube.WarningCollector{},
		}, nil
	}
}

func runCLI(t *testing.T, connect clientFactory, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	root := newRoot(streams, connect)
	root.SetArgs(args)
	err := root.Execute()
	if Printable(err) {
		report.Error(errOut, err)
	}
	return out.String(), errOut.String(), ExitCode(err)
}

type jsonDoc struct {
	SchemaVersion int `json:"schemaVersion"`
	Command       string
	Summary       map[string]int
	Checks        []struct {
		ID       string
		Status   string
		Reason   string
		Findings []jsonFinding
	}
}

type jsonFinding struct{ Severity, Object, Message string }

func decode(t *testing.T, out string) jsonDoc {
	t.Helper()
	var doc jsonDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	return doc
}

var configOnly = []string{"doctor", "--only", "LA0,LA1", "--no-helpers", "-o", "json"}

func TestDoctorOnTheHealthySetupPassesEveryConfigurationCheck(t *testing.T) {
	out, errOut, code := runCLI(t, fixtureClients(t, fixtures+"/healthy"), configOnly...)
	require.Equal(t, ExitOK, code, errOut+out)
	doc := decode(t, out)
	assert.Equal(t, 1, doc.SchemaVersion)
	assert.Equal(t, "doctor", doc.Command)
	require.Len(t, doc.Checks, 8, "LA001 and LA101-LA107")
	for _, c := range doc.Checks {
		assert.Equal(t, "pass", c.Status, "%s: %+v", c.ID, c.Findings)
	}
}

// Every broken fixture makes doctor exit 1 with the expected check, status and object.
func TestDoctorOnEachBrokenVariantFailsWithItsID(t *testing.T) {
	dirs, err := filepath.Glob(fixtures + "/broken/*")
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			args := append([]string{}, configOnly...)
			if raw, err := os.ReadFile(filepath.Join(dir, "flags")); err == nil {
				args = append(args, strings.Fields(string(raw))...)
			}
			out, errOut, code := runCLI(t, fixtureClients(t, fixtures+"/healthy", dir), args...)
			doc := decode(t, out)
			expectations, err := fixture.ReadExpectations(filepath.Join(dir, "expect"))
			require.NoError(t, err)
			wantFail := false
			for _, e := range expectations {
				wantFail = wantFail || e.Status == "fail"
				assert.True(t, metBy(t, e, doc), "%s: no finding on %q in %s", e.ID, e.Object, out)
			}
			if wantFail {
				assert.Equal(t, ExitFailed, code, errOut)
			}
		})
	}
}

// metBy checks the expected check's status in doc, and says whether one of its findings is
// about the expected object.
func metBy(t *testing.T, e fixture.Expectation, doc jsonDoc) bool {
	t.Helper()
	found := false
	for _, c := range doc.Checks {
		if c.ID != e.ID {
			continue
		}
		assert.Equal(t, e.Status, c.Status, "%s %+v", e.ID, c.Findings)
		found = found || slices.ContainsFunc(c.Findings, func(f jsonFinding) bool { return f.Object == e.Object })
	}
	return found
}

func TestDoctorNamingAMissingObjectExitsTwoNamingIt(t *testing.T) {
	_, errOut, code := runCLI(t, fixtureClients(t, fixtures+"/healthy"), "doctor", "--no-helpers", "--dns-service", "lan-dns/nope")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, errOut, `DNS Service "nope" not found in namespace lan-dns`)
	assert.Contains(t, errOut, "--dns-service")
}

func TestDoctorRejectsAnUnknownCheckID(t *testing.T) {
	_, errOut, code := runCLI(t, fixtureClients(t, fixtures+"/healthy"), "doctor", "--only", "LA999")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, errOut, "LA999")
}

func TestDoctorRejectsBadFlagValues(t *testing.T) {
	for _, args := range [][]string{
		{"doctor", "-o", "xml"},
		{"doctor", "--fail-on", "info"},
		{"doctor", "--expect-status", "42"},
		{"doctor", "--timeout", "0s"},
		{"doctor", "--no-such-flag"},
	} {
		_, errOut, code := runCLI(t, fixtureClients(t, fixtures+"/healthy"), args...)
		assert.Equal(t, ExitUsage, code, "%v: %s", args, errOut)
	}
}

func TestFailOnWarnTurnsAWarningIntoExitOne(t *testing.T) {
	dir := fixtures + "/broken/la105-no-pdb"
	_, _, code := runCLI(t, fixtureClients(t, fixtures+"/healthy", dir), "doctor", "--only", "LA105", "--no-helpers")
	assert.Equal(t, ExitOK, code, "a warning alone passes by default")
	_, _, code = runCLI(t, fixtureClients(t, fixtures+"/healthy", dir), "doctor", "--only", "LA105", "--no-helpers", "--fail-on=warn")
	assert.Equal(t, ExitFailed, code)
}

func TestReportsGoToFilesWhileTheTerminalKeepsText(t *testing.T) {
	tmp := t.TempDir()
	junit, js := filepath.Join(tmp, "r.xml"), filepath.Join(tmp, "r.json")
	out, _, code := runCLI(t, fixtureClients(t, fixtures+"/healthy"), "doctor", "--only", "LA1", "--no-helpers", "--junit-file", junit, "--json-file", js)
	require.Equal(t, ExitOK, code)
	assert.Contains(t, out, "passed, 0 warned, 0 failed")
	raw, err := os.ReadFile(junit)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "<testsuites")
	raw, err = os.ReadFile(js)
	require.NoError(t, err)
	assert.Equal(t, 7, len(decode(t, string(raw)).Checks))
}

func TestConfigFileSetsFlagsThatTheCommandLineDoesNot(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "lanaccess.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("only: [LA101, LA102]\noutput: json\nno-helpers: true\n"), 0o644))
	out, errOut, code := runCLI(t, fixtureClients(t, fixtures+"/healthy"), "doctor", "--config", cfg)
	require.Equal(t, ExitOK, code, errOut)
	assert.Len(t, decode(t, out).Checks, 2)

	out, _, _ = runCLI(t, fixtureClients(t, fixtures+"/healthy"), "doctor", "--config", cfg, "--only", "LA103")
	assert.Len(t, decode(t, out).Checks, 1, "the command line wins over the file")

	require.NoError(t, os.WriteFile(cfg, []byte("colour: always\n"), 0o644))
	_, errOut, code = runCLI(t, fixtureClients(t, fixtures+"/healthy"), "doctor", "--config", cfg)
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, errOut, `unknown setting "colour"`)
}

func TestWaitRetriesUntilTheDeadlineAndShowsWhatStillFails(t *testing.T) {
	dir := fixtures + "/broken/la101-dns-lacks-an-address"
	start := time.Now()
	_, errOut, code := runCLI(t, fixtureClients(t, fixtures+"/healthy", dir), "doctor", "--only", "LA101", "--no-helpers", "--wait", "250ms", "--wait-interval", "100ms")
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, errOut, "attempt 1: still failing: LA101=fail")
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestJUnitOutputHasOneTestcasePerCheck(t *testing.T) {
	out, _, code := runCLI(t, fixtureClients(t, fixtures+"/healthy"), "doctor", "--only", "LA1", "--no-helpers", "-o", "junit")
	require.Equal(t, ExitOK, code)
	assert.Equal(t, 7, bytes.Count([]byte(out), []byte("<testcase ")))
}

func TestVersionPrintsVersionCommitAndDate(t *testing.T) {
	out, _, code := runCLI(t, nil, "version", "-o", "json")
	require.Equal(t, ExitOK, code)
	var v map[string]string
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	for _, k := range []string{"version", "commit", "date"} {
		assert.NotEmpty(t, v[k], k)
	}

	out, _, code = runCLI(t, nil, "version", "-o", "yaml")
	require.Equal(t, ExitOK, code)
	var y map[string]string
	require.NoError(t, yaml.Unmarshal([]byte(out), &y))
	assert.Equal(t, v, y, "yaml and json say the same")

	_, _, code = runCLI(t, nil, "version", "-o", "xml")
	assert.Equal(t, ExitUsage, code)
}
