package dashrender

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
)

// fakeAPI answers like Prometheus' HTTP API: every range query with one series stepping from 1
// to 0 halfway, instant queries of the check table with two checks, others with 42.
func fakeAPI(t *testing.T, asked *[]string) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("query")
		*asked = append(*asked, q)
		var result []map[string]any
		switch {
		case r.URL.Path == "/api/v1/query_range":
			values := make([][]any, 0, 10)
			for i := range 10 {
				v := "1"
				if i >= 5 {
					v = "0"
				}
				values = append(values, []any{float64(1000 + 5*i), v})
			}
			result = []map[string]any{{"metric": map[string]string{"kind": "dns_udp"}, "values": values}}
		case strings.Contains(q, "lanaccess_check_status"):
			result = []map[string]any{
				{"metric": map[string]string{"check": "LA301", "status": "fail", "title": "DNS answers A", "section": "DNS path"}, "value": []any{1045.0, "1"}},
				{"metric": map[string]string{"check": "LA101", "status": "pass", "title": "Same addresses", "section": "Configuration"}, "value": []any{1045.0, "1"}},
			}
		default:
			result = []map[string]any{{"metric": map[string]string{}, "value": []any{1045.0, "42"}}}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
	}))
}

func TestTheShippedDashboardIsDrawnWithOneRowPerAddress(t *testing.T) {
	raw, err := manifests.Get("monitor-dashboard")
	require.NoError(t, err)
	d, err := Parse(raw)
	require.NoError(t, err)
	var asked []string
	srv := fakeAPI(t, &asked)
	defer srv.Close()
	svg, err := Render(t.Context(), d, Prometheus{URL: srv.URL}, Options{
		Start: time.Unix(1000, 0), End: time.Unix(1045, 0), Step: 5 * time.Second,
		Vars:    map[string]string{"instance": "10.0.10.50:9877", "__rate_interval": "30s"},
		Repeats: map[string][]string{"address": {"10.0.10.11", "10.0.10.12"}},
	})
	require.NoError(t, err)
	require.NoError(t, xml.Unmarshal([]byte(svg), new(struct{})), "well-formed SVG")
	for _, want := range []string{"Address 10.0.10.11", "Address 10.0.10.12", "Failing checks", "LA301", "LA101", "What it proves", ">42<"} {
		assert.Contains(t, svg, want)
	}
	for _, q := range asked {
		assert.NotContains(t, q, "$", "every variable is replaced: %s", q)
	}
	assert.Contains(t, strings.Join(asked, "\n"), `address="10.0.10.12"`)
	assert.Equal(t, 2, strings.Count(svg, ">DNS<"), "one DNS panel per address row")
}

func TestRepeatedRowsPushThePanelsBelowThemDown(t *testing.T) {
	d := Dashboard{Panels: []Panel{
		{Type: "row", Title: "A $x", Repeat: "x", GridPos: GridPos{Y: 0, H: 1, W: 24}},
		{Type: "stat", Title: "s $x", GridPos: GridPos{Y: 1, H: 4, W: 6}},
		{Type: "row", Title: "after", GridPos: GridPos{Y: 5, H: 1, W: 24}},
	}}
	out := d.Expand(nil, map[string][]string{"x": {"1", "2", "3"}})
	got := make([]string, 0, len(out))
	for _, p := range out {
		got = append(got, fmt.Sprintf("%s@%d", p.Title, p.GridPos.Y))
	}
	assert.Equal(t, []string{"A 1@0", "s 1@1", "A 2@5", "s 2@6", "A 3@10", "s 3@11", "after@15"}, got)
}
