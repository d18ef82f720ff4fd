package dashrender

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Prometheus asks a Prometheus server's HTTP API (/api/v1/query and /api/v1/query_range).
type Prometheus struct {
	URL    string // e.g. http://10.0.10.50:9090
	Client *http.Client
}

// Series is one result series: its labels and its points (one point for an instant query).
type Series struct {
	Labels map[string]string
	Times  []time.Time
	Values []float64
}

type apiResponse struct {
	Status    string `json:"status"`
	Error     string `json:"error"`
	ErrorType string `json:"errorType"`
	Data      struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
			Values [][]any           `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

// Range runs expr from start to end every step.
func (p Prometheus) Range(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]Series, error) {
	q := url.Values{"query": {expr}, "start": {unix(start)}, "end": {unix(end)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	return p.get(ctx, "/api/v1/query_range", q)
}

// Instant runs expr at t.
func (p Prometheus) Instant(ctx context.Context, expr string, t time.Time) ([]Series, error) {
	return p.get(ctx, "/api/v1/query", url.Values{"query": {expr}, "time": {unix(t)}})
}

func unix(t time.Time) string { return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', 3, 64) }

func (p Prometheus) get(ctx context.Context, path string, q url.Values) ([]Series, error) {
	client := p.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(p.URL, "/")+path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, err
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", path, resp.Status, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s %q: %s: %s", path, q.Get("query"), r.ErrorType, r.Error)
	}
	var out []Series
	for _, res := range r.Data.Result {
		s := Series{Labels: res.Metric}
		points := res.Values
		if res.Value != nil {
			points = [][]any{res.Value}
		}
		for _, pt := range points {
			t, v, err := point(pt)
			if err != nil {
				return nil, err
			}
			s.Times = append(s.Times, t)
			s.Values = append(s.Values, v)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return labelKey(out[i].Labels) < labelKey(out[j].Labels) })
	return out, nil
}

// point reads [unix seconds, "value"] as the API writes it.
func point(pt []any) (time.Time, float64, error) {
	if len(pt) != 2 {
		return time.Time{}, 0, fmt.Errorf("a point of %d fields", len(pt))
	}
	sec, ok := pt[0].(float64)
	text, ok2 := pt[1].(string)
	if !ok || !ok2 {
		return time.Time{}, 0, fmt.Errorf("a point %v", pt)
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return time.Time{}, 0, err
	}
	return time.Unix(0, int64(sec*1e9)), v, nil
}

func labelKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + l[k] + ",")
	}
	return b.String()
}
