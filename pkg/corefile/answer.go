package corefile

import (
	"net/netip"
	"strconv"
	"strings"
	gotmpl "text/template"
	"text/template/parse"

	"github.com/miekg/dns"
)

// Answer is one record of a template, e.g. `{{ .Name }} 60 IN A 10.0.10.11`.
type Answer struct {
	Line int
	// Text is the Go template as written in the Corefile.
	Text string
	// Static is true when the text uses only .Name, .Zone, .Class and .Type, so the record
	// is known without a query. Other answers (.Match, .Remote, if/range...) are not judged.
	Static bool
	// Record is the text rendered for a sample query (static answers only).
	Record string
	// OwnerIsQueryName is true when the owner is {{ .Name }}: the answer fits any name asked.
	OwnerIsQueryName bool
	TTL              uint32
	// Type is the record type as written ("A"), Data its data as written ("10.0.10.11"):
	// kept raw so a non-canonical address can be quoted back to the user.
	Type string
	Data string
	// Addr is the address of a valid A or AAAA record.
	Addr netip.Addr
	// Err says why the record is not valid ("" when it is, or when it is not static).
	Err string
}

type sampleQuery struct {
	Name, Zone, Class, Type string
}

func parseAnswer(text string, line int, q sampleQuery) Answer {
	a := Answer{Line: line, Text: text}
	tmpl, err := gotmpl.New("answer").Funcs(gotmpl.FuncMap{"parseInt": strconv.ParseUint}).Parse(text)
	if err != nil {
		a.Err = "not a valid template: " + err.Error()
		return a
	}
	rendered, ok := renderStatic(tmpl, q)
	if !ok {
		return a
	}
	a.Static, a.Record = true, rendered
	a.Type, a.Data = typeAndData(rendered)
	rr, err := dns.NewRR(rendered)
	switch {
	case err != nil:
		a.Err = err.Error()
		return a
	case rr == nil:
		a.Err = "empty record"
		return a
	}
	h := rr.Header()
	a.TTL = h.Ttl
	a.OwnerIsQueryName = strings.EqualFold(h.Name, q.Name)
	switch r := rr.(type) {
	case *dns.A:
		if ip, ok := netip.AddrFromSlice(r.A.To4()); ok {
			a.Addr = ip
		}
	case *dns.AAAA:
		if ip, ok := netip.AddrFromSlice(r.AAAA.To16()); ok {
			a.Addr = ip
		}
	}
	return a
}

// renderStatic substitutes the simple field actions of tmpl without executing it: executing
// arbitrary templates from a cluster object could loop (range over a large number).
func renderStatic(tmpl *gotmpl.Template, q sampleQuery) (string, bool) {
	if tmpl.Tree == nil || tmpl.Root == nil {
		return "", true
	}
	var b strings.Builder
	for _, n := range tmpl.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			b.Write(n.Text)
		case *parse.CommentNode:
		case *parse.ActionNode:
			v, ok := fieldValue(n, q)
			if !ok {
				return "", false
			}
			b.WriteString(v)
		default:
			return "", false
		}
	}
	return b.String(), true
}

func fieldValue(n *parse.ActionNode, q sampleQuery) (string, bool) {
	if n.Pipe == nil || len(n.Pipe.Decl) > 0 || len(n.Pipe.Cmds) != 1 || len(n.Pipe.Cmds[0].Args) != 1 {
		return "", false
	}
	f, ok := n.Pipe.Cmds[0].Args[0].(*parse.FieldNode)
	if !ok || len(f.Ident) != 1 {
		return "", false
	}
	switch f.Ident[0] {
	case "Name":
		return q.Name, true
	case "Zone":
		return q.Zone, true
	case "Class":
		return q.Class, true
	case "Type":
		return q.Type, true
	}
	return "", false
}

// typeAndData finds the record type in "owner [ttl] [class] type data..." and returns it
// with the data as written.
func typeAndData(record string) (string, string) {
	fields := strings.Fields(record)
	seenClass := false
	for i := 1; i < len(fields); i++ {
		f := strings.ToUpper(fields[i])
		if _, err := strconv.ParseUint(f, 10, 32); err == nil {
			continue
		}
		if _, ok := dns.StringToClass[f]; ok && !seenClass && f != "ANY" {
			seenClass = true
			continue
		}
		if _, ok := dns.StringToType[f]; ok {
			return f, strings.Join(fields[i+1:], " ")
		}
		return "", ""
	}
	return "", ""
}
