package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// hostile is what a certificate subject, a Location header or a route host may carry: a
// sequence that erases the line and redraws a fake verdict, a bidi override, C1 and DEL.
const hostile = "ok\x1b[2K\r  PASS  LA401 fake\u202egnp.exe\u0085\x7f\xff end"

func TestEscapeMakesControlsAndBidiVisible(t *testing.T) {
	got := Escape(hostile)
	assert.Equal(t, `ok\x1b[2K\x0d  PASS  LA401 fake\u202egnp.exe\u0085\x7f\xff end`, got)
	assert.Equal(t, "a\nb\\x1b", EscapeLines("a\nb\x1b"))
	assert.Equal(t, `a\x0ab`, Escape("a\nb"), "one-line fields keep one line")
	assert.Equal(t, "plain ascii é \uFFFD", Escape("plain ascii é \uFFFD"), "printable text and a real U+FFFD stay")
}

func hostileReport() Report {
	return Report{
		Command: "doctor", Cluster: Cluster{Context: "ctx\x1b]0;title\x07", Server: "https://x"},
		Subject: []KV{{Key: "proxy", Value: hostile}},
		Results: []engine.Result{{ID: "LA401", Title: "HTTPS", Section: "HTTPS path", Status: engine.StatusFail, Reason: hostile,
			Findings: []engine.Finding{{Code: "LA401-CERT-HOST", Severity: engine.SeverityFail, Object: hostile, Message: hostile,
				Evidence: map[string]any{"certSubject": hostile, "names": []string{hostile}}, Remediation: "openssl s_client\n" + hostile}}}},
	}
}

func TestTextReportNeverWritesAControlSequence(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteText(&buf, hostileReport(), TextOptions{Verbose: true}))
	out := buf.String()
	for _, bad := range []string{"\x1b", "\r", "\u202e", "\u0085", "\x7f", "\x07"} {
		assert.NotContains(t, out, bad)
	}
	assert.Contains(t, out, `\x1b[2K`)

	var errOut bytes.Buffer
	Error(&errOut, assertError(hostile))
	assert.NotContains(t, errOut.String(), "\x1b")
}

type assertError string

func (e assertError) Error() string { return string(e) }

func TestJSONAndJUnitStayValidWithHostileValues(t *testing.T) {
	var js, xm bytes.Buffer
	require.NoError(t, WriteJSON(&js, hostileReport()))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(js.Bytes(), &doc))
	assert.False(t, strings.Contains(js.String(), "\x1b"), "JSON escapes controls")
	require.NoError(t, WriteJUnit(&xm, hostileReport()))
	dec := xml.NewDecoder(&xm)
	for {
		_, err := dec.Token()
		if err != nil {
			assert.Equal(t, "EOF", err.Error(), "the JUnit report parses")
			break
		}
	}
}

// Issue 23: `-o yaml` printed nothing (exit 3) when a text held DEL or a C1 control, because the
// report went JSON -> YAML and the YAML parser refuses them. The YAML written must parse back to
// exactly the JSON contract's values, whatever the texts hold.
func TestYAMLStaysValidAndEqualToJSONWithHostileValues(t *testing.T) {
	for _, text := range []string{hostile, "\x7f", "\u0085", "\u009b[31m", "\u2028\u2029", "a: b\n- c", "\xff\xfe", "", "~", "null", "0x10", "'\"", "\ufeffbom"} {
		rep := hostileReport()
		rep.Results[0].Reason = text
		rep.Results[0].Findings[0].Evidence["extra"] = text
		var js, ym bytes.Buffer
		require.NoError(t, WriteJSON(&js, rep))
		require.NoError(t, WriteYAML(&ym, rep), "%q", text)
		var fromJSON, fromYAML any
		require.NoError(t, json.Unmarshal(js.Bytes(), &fromJSON))
		require.NoError(t, yaml.Unmarshal(ym.Bytes(), &fromYAML), "%q:\n%s", text, ym.String())
		assert.Equal(t, fromJSON, fromYAML, "%q", text)
		for _, bad := range []string{"\x1b", "\x7f", "\u0085", "\u009b"} {
			assert.NotContains(t, ym.String(), bad, "controls are escaped in the YAML text")
		}
	}
}

// The YAML keeps the JSON contract's field order (schemaVersion first), as the JSON does.
func TestYAMLKeepsTheContractsFieldOrder(t *testing.T) {
	var ym bytes.Buffer
	require.NoError(t, WriteYAML(&ym, hostileReport()))
	assert.True(t, strings.HasPrefix(ym.String(), "schemaVersion: 1\ncommand: doctor\ncluster:\n"), ym.String())
}

// --wait's "attempt N" line carries the error of an attempt that could not run, which can hold
// an API Status message written by whoever controls the server: its terminal escapes are shown,
// not obeyed (issue 23).
func TestAWaitAttemptsErrorIsEscaped(t *testing.T) {
	var out bytes.Buffer
	AttemptError(&out, 2, errors.New("the server said \x1b]0;pwned\x07\x1b[2J no"), "5s")
	assert.NotContains(t, out.String(), "\x1b")
	assert.NotContains(t, out.String(), "\x07")
	assert.Contains(t, out.String(), "attempt 2: ")
	assert.True(t, strings.HasSuffix(out.String(), "; retrying in 5s\n"), out.String())
	assert.Equal(t, 1, strings.Count(out.String(), "\n"), "one line")
}
