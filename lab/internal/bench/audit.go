package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// APICounts are the requests one run made, as the apiserver's audit log recorded them.
type APICounts struct {
	Total      int
	ByVerb     map[string]int
	ByResource map[string]int // "verb resource" (e.g. "list services"), subresource after a slash
}

// Verbs formats the counts by verb, largest first: "list 14, get 1, create 1".
func (c APICounts) Verbs() string {
	return formatCounts(c.ByVerb)
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// auditEvent is the part of an audit.k8s.io/v1 Event the benchmark reads.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	RequestURI string `json:"requestURI"`
}

// AuditTail reads what the apiserver appended to its audit log since the last read.
type AuditTail struct {
	Path   string
	User   string // only this user's events count
	offset int64
}

// NewAuditTail starts at the end of the log: earlier requests do not count.
func NewAuditTail(path, user string) (*AuditTail, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w (the lab's apiserver writes it; restart the lab with `lab down` and `lab up` if it predates the audit flags)", err)
	}
	return &AuditTail{Path: path, User: user, offset: st.Size()}, nil
}

// Skip moves to the end of the log.
func (a *AuditTail) Skip() error {
	st, err := os.Stat(a.Path)
	if err != nil {
		return err
	}
	a.offset = st.Size()
	return nil
}

// Settle reads the new events once the log has stopped growing (the apiserver writes the
// ResponseComplete event after the response, so the last ones may land just after the client
// exits); it waits at most max.
func (a *AuditTail) Settle(max time.Duration) (APICounts, error) {
	deadline := time.Now().Add(max)
	last := int64(-1)
	for {
		st, err := os.Stat(a.Path)
		if err != nil {
			return APICounts{}, err
		}
		if st.Size() == last || time.Now().After(deadline) {
			break
		}
		last = st.Size()
		time.Sleep(150 * time.Millisecond)
	}
	f, err := os.Open(a.Path)
	if err != nil {
		return APICounts{}, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return APICounts{}, err
	}
	counts, n, err := CountAudit(f, a.User)
	a.offset += n
	return counts, err
}

// CountAudit counts the completed requests of user in a JSON-lines audit log and returns how
// many bytes of whole lines it consumed.
func CountAudit(r io.Reader, user string) (APICounts, int64, error) {
	c := APICounts{ByVerb: map[string]int{}, ByResource: map[string]int{}}
	br := bufio.NewReaderSize(r, 1<<20)
	var read int64
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return c, read, nil // a partial last line is read next time
		}
		if err != nil {
			return c, read, err
		}
		read += int64(len(line))
		var ev auditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return c, read, fmt.Errorf("audit log line: %w", err)
		}
		if ev.Stage != "ResponseComplete" && ev.Stage != "Panic" {
			continue
		}
		if user != "" && ev.User.Username != user {
			continue
		}
		c.Total++
		c.ByVerb[ev.Verb]++
		res := ev.RequestURI
		if ev.ObjectRef != nil && ev.ObjectRef.Resource != "" {
			res = ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				res += "/" + ev.ObjectRef.Subresource
			}
		}
		c.ByResource[ev.Verb+" "+res]++
	}
}
