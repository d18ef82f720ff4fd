package cli

import (
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
)

func TestExplainPrintsTheCatalogueEntry(t *testing.T) {
	la301 := catalogue.Get("LA301")
	vpn002 := catalogue.Get("VPN002")
	for _, tc := range []struct {
		arg   string
		first string
		wants []string
	}{
		{"LA301", "LA301: " + la301.Title, append([]string{la301.Proves[:40], "command: doctor"}, la301.CodeStrings()...)},
		{"la301", "LA301: " + la301.Title, nil},
		{"VPN002-OFF", "VPN002-OFF: ", append([]string{"VPN002: " + vpn002.Title, "command: vpn-trace"}, vpn002.CodeStrings()...)},
		{"LA000", "LA000: ", []string{"command: doctor", "section: Run"}},
		{"WS001", "WS001: ", []string{"command: client-check"}},
	} {
		out, errOut, code := runCLI(t, nil, "explain", tc.arg)
		require.Equal(t, 0, code, "%s: %s", tc.arg, errOut)
		flat := strings.Join(strings.Fields(out), " ")
		assert.True(t, strings.HasPrefix(flat, strings.TrimSpace(tc.first)), "%s: %q", tc.arg, out)
		for _, w := range tc.wants {
			assert.Contains(t, flat, strings.Join(strings.Fields(w), " "), tc.arg)
		}
	}
}

func TestExplainRefusesWhatTheCatalogueDoesNotHave(t *testing.T) {
	for _, args := range [][]string{{"explain", "LA999"}, {"explain", "LA301-NOPE"}, {"explain"}} {
		_, errOut, code := runCLI(t, nil, args...)
		assert.Equal(t, ExitUsage, code, "%v: %s", args, errOut)
	}
}

// Every ID explains, and every code finds its check, within 80 columns (a long word aside).
func TestExplainKnowsEveryIDAndCode(t *testing.T) {
	for _, e := range explainEntries() {
		keys := append([]string{e.ID}, e.CodeStrings()...)
		for _, k := range keys {
			got, code, ok := lookupExplain(k)
			require.True(t, ok, k)
			assert.Equal(t, e.ID, got.ID, k)
			assert.Equal(t, k != e.ID, code != nil, k)
		}
		out, _, exit := runCLI(t, nil, "explain", e.ID)
		require.Equal(t, 0, exit, e.ID)
		for line := range strings.SplitSeq(out, "\n") {
			if runewidth.StringWidth(line) > helpWidth {
				assert.NotContains(t, strings.TrimSpace(line), " ", "%s: %q is longer than 80 columns", e.ID, line)
			}
		}
	}
}
