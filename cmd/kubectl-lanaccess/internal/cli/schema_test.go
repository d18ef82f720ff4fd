package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
)

var schemaPage = filepath.Join("..", "..", "..", "..", "docs", "report.schema.json")

// compileSchema compiles the report's schema with a real JSON Schema validator; strict also
// refuses any field the schema does not name (the published schema allows added fields).
func compileSchema(t *testing.T, strict bool) *jsonschema.Schema {
	t.Helper()
	raw, err := report.JSONSchema()
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	if strict {
		closeObjects(doc)
	}
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(report.SchemaID, doc))
	s, err := c.Compile(report.SchemaID)
	require.NoError(t, err)
	return s
}

func closeObjects(v any) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["properties"]; ok {
			v["additionalProperties"] = false
		}
		for _, c := range v {
			closeObjects(c)
		}
	case []any:
		for _, c := range v {
			closeObjects(c)
		}
	}
}

func validateReport(t *testing.T, s *jsonschema.Schema, out, what string) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	require.NoError(t, err, what)
	assert.NoError(t, s.Validate(doc), what)
}

// The schema validates what the commands really print: a full doctor report with findings and
// evidence (against the stand-in LAN, a dead address for failures), a run that could not
// start, and a usage error's report; strictly, so no field escapes the schema.
func TestReportSchemaValidatesRealReports(t *testing.T) {
	strict := compileSchema(t, true)
	lan := probetest.NewLAN(t)
	lan.Cut("10.0.10.12")
	out, errOut, code := runOfflineDoctor(t, lan, "--addresses", strings.Join(lan.Addrs, ","), "--zone", probetest.LANZone,
		"--host", probetest.LANHost, "--ca-file", lan.CAFile, "-o", "json", "--verbose")
	require.Equal(t, ExitFailed, code, errOut)
	require.Contains(t, out, `"evidence"`)
	validateReport(t, strict, out, "doctor --addresses")

	unreachable := kubeconfigFor(t, "https://127.0.0.1:1")
	out, _, code = runReal(t, "vpn-trace", "-o", "json", "--kubeconfig", unreachable, "--request-timeout", "2s")
	require.Equal(t, ExitUnevaluated, code)
	validateReport(t, strict, out, "vpn-trace, not started")

	out, _, code = runReal(t, "client-check", "-o", "json", "--skip", "NOPE")
	require.Equal(t, ExitUsage, code)
	validateReport(t, strict, out, "client-check, usage error")
}

// The schema refuses what the contract forbids.
func TestReportSchemaRefusesWhatTheContractForbids(t *testing.T) {
	s := compileSchema(t, false)
	ok := `{"schemaVersion":1,"command":"doctor","cluster":{"context":"c","server":"s"},"summary":{"pass":1,"warn":0,"fail":0,"skip":0,"error":0},"checks":[{"id":"LA001","title":"t","status":"pass","durationMs":1,"findings":[{"severity":"info","message":"m","evidence":{"k":[1,"a"]}}]}]}`
	validateReport(t, s, ok, "a valid report")
	for name, bad := range map[string]string{
		"schemaVersion 2":    strings.Replace(ok, `"schemaVersion":1`, `"schemaVersion":2`, 1),
		"unknown status":     strings.Replace(ok, `"status":"pass"`, `"status":"ok"`, 1),
		"unknown severity":   strings.Replace(ok, `"severity":"info"`, `"severity":"note"`, 1),
		"no checks":          strings.Replace(ok, `,"checks":[`, `,"checkz":[`, 1),
		"duration as string": strings.Replace(ok, `"durationMs":1`, `"durationMs":"1"`, 1),
	} {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		require.NoError(t, err, name)
		assert.Error(t, s.Validate(doc), name)
	}
}

// docs/report.schema.json is the generated schema; `make docs` rewrites it.
func TestSchemaPagesAreTheReport(t *testing.T) {
	raw, err := report.JSONSchema()
	require.NoError(t, err)
	raw = append(raw, '\n')
	if *updateDocs {
		require.NoError(t, os.WriteFile(schemaPage, raw, 0o644))
	}
	got, err := os.ReadFile(schemaPage)
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(got), "docs/report.schema.json drifted from the report: run make docs")
}
