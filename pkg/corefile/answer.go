package corefile

import (
	"errors"
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
	// is known for any name asked. Answers that use .Group or .Match are computed per name
	// (Query does), anything else (.Remote, .Meta, if/range...) is not evaluated.
	Static bool
	// The fields below describe the record rendered for a sample name of the template's first
	// zone (static answers only).
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
	// Err says why the record is not valid: CoreDNS builds it at query time with dns.NewRR, and
	// a record that does not parse makes the query SERVFAIL (plugin/template/template.go
	// executeRRTemplate). "" when it is valid, or not static.
	Err string
	// Unread says why a rendered answer was not read (a zone-file $INCLUDE: see readAnswer);
	// such an answer is not Static.
	Unread string

	tmpl *gotmpl.Template
}

// tmplData is what CoreDNS gives an answer template (plugin/template/template.go templateData),
// minus what a configuration cannot show (the client's address, metadata, the message).
type tmplData struct {
	Name, Zone, Class, Type, Regex string
	Match                          []string
	Group                          map[string]string
}

// compileAnswer compiles text as CoreDNS's newTemplate does (text/template with parseInt).
func compileAnswer(text string, line int) (Answer, error) {
	a := Answer{Line: line, Text: text}
	tmpl, err := gotmpl.New("answer").Funcs(gotmpl.FuncMap{"parseInt": strconv.ParseUint}).Parse(text)
	if err != nil {
		return a, err
	}
	a.tmpl = tmpl
	a.Static = usesOnly(tmpl, "Name", "Zone", "Class", "Type")
	return a, nil
}

// describe fills the sample fields for a name of zone, of the given class and type.
func (a *Answer) describe(zone, class, qtype string) {
	if !a.Static {
		return
	}
	name := "lanaccess-probe." + zone
	if zone == "." || zone == "" {
		name, zone = "lanaccess-probe.", "."
	}
	if class == "" || class == "ANY" {
		class = "IN"
	}
	if qtype == "" || qtype == "ANY" {
		qtype = "A"
	}
	text, ok := a.render(tmplData{Name: name, Zone: zone, Class: class, Type: qtype})
	if !ok {
		a.Static = false
		return
	}
	a.Record = text
	a.Type, a.Data = typeAndData(text)
	rr, unread, err := readAnswer(text)
	switch {
	case unread != "":
		a.Static, a.Unread = false, unread
		return
	case err != nil:
		a.Err = err.Error()
		return
	case rr == nil:
		a.Err = "empty record"
		return
	}
	h := rr.Header()
	a.TTL = h.Ttl
	a.OwnerIsQueryName = strings.EqualFold(h.Name, name)
	a.Addr = rrAddr(rr)
}

// readAnswer reads a rendered answer as CoreDNS does with dns.NewRR, except for one thing:
// NewRR's ReadRR allows $INCLUDE (miekg/dns scan.go), so CoreDNS reads the named file in its
// pod, and the same call here would read a file of this machine (/etc/passwd into the report,
// /dev/zero for ever). Here an $INCLUDE goes to a pod file system that shows no file (podFS
// without files: every path unknown), and the answer is left unread (unread says why);
// $GENERATE, $TTL and $ORIGIN are read as NewRR reads them (its first record only).
func readAnswer(text string) (rr dns.RR, unread string, err error) {
	if !strings.HasSuffix(text, "\n") {
		text += "\n" // as NewRR: a closing newline
	}
	zp := dns.NewZoneParser(strings.NewReader(text), ".", "")
	zp.SetDefaultTTL(3600) // ReadRR's default (miekg/dns defaultTtl)
	zp.SetIncludeAllowed(true)
	zp.SetIncludeFS(podFS{opened: new([]string)})
	rr, _ = zp.Next()
	err = zp.Err()
	if _, ok := errors.AsType[errUnknownPath](err); ok {
		return nil, "it holds a zone-file $INCLUDE: CoreDNS reads that file in its pod (dns.NewRR allows $INCLUDE), which this plugin never opens", nil
	}
	return rr, "", err
}

func rrAddr(rr dns.RR) netip.Addr {
	switch r := rr.(type) {
	case *dns.A:
		if ip, ok := netip.AddrFromSlice(r.A.To4()); ok {
			return ip
		}
	case *dns.AAAA:
		if ip, ok := netip.AddrFromSlice(r.AAAA.To16()); ok {
			return ip
		}
	}
	return netip.Addr{}
}

// render executes the template for data without running arbitrary template code (a cluster
// object could loop forever with range): only text, comments, fields of data and `index` of
// .Match or .Group are evaluated; ok is false for anything else. A missing .Group key prints
// "<no value>", as text/template does for a map.
func (a *Answer) render(data tmplData) (string, bool) {
	if a.tmpl == nil || a.tmpl.Tree == nil || a.tmpl.Root == nil {
		return "", a.tmpl != nil
	}
	var b strings.Builder
	for _, n := range a.tmpl.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			b.Write(n.Text)
		case *parse.CommentNode:
		case *parse.ActionNode:
			v, ok := evalAction(n, data)
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

func evalAction(n *parse.ActionNode, data tmplData) (string, bool) {
	if n.Pipe == nil || len(n.Pipe.Decl) > 0 || len(n.Pipe.Cmds) != 1 {
		return "", false
	}
	args := n.Pipe.Cmds[0].Args
	switch {
	case len(args) == 1:
		f, ok := args[0].(*parse.FieldNode)
		if !ok {
			return "", false
		}
		return field(f.Ident, data)
	case len(args) == 3:
		id, ok := args[0].(*parse.IdentifierNode)
		f, okf := args[1].(*parse.FieldNode)
		if !ok || !okf || id.Ident != "index" || len(f.Ident) != 1 {
			return "", false
		}
		switch key := args[2].(type) {
		case *parse.NumberNode:
			if f.Ident[0] != "Match" || !key.IsInt || key.Int64 < 0 || key.Int64 >= int64(len(data.Match)) {
				return "", false // out of range is an execution error: not modelled
			}
			return data.Match[key.Int64], true
		case *parse.StringNode:
			if f.Ident[0] != "Group" {
				return "", false
			}
			v, ok := data.Group[key.Text]
			if !ok {
				return "<no value>", true
			}
			return v, true
		}
	}
	return "", false
}

func field(ident []string, data tmplData) (string, bool) {
	switch {
	case len(ident) == 1:
		switch ident[0] {
		case "Name":
			return data.Name, true
		case "Zone":
			return data.Zone, true
		case "Class":
			return data.Class, true
		case "Type":
			return data.Type, true
		case "Regex":
			return data.Regex, true
		}
	case len(ident) == 2 && ident[0] == "Group":
		v, ok := data.Group[ident[1]]
		if !ok {
			return "<no value>", true
		}
		return v, true
	}
	return "", false
}

// usesOnly reports whether every action of tmpl is one of the named fields.
func usesOnly(tmpl *gotmpl.Template, fields ...string) bool {
	if tmpl.Tree == nil || tmpl.Root == nil {
		return true
	}
	for _, n := range tmpl.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode, *parse.CommentNode:
		case *parse.ActionNode:
			if n.Pipe == nil || len(n.Pipe.Decl) > 0 || len(n.Pipe.Cmds) != 1 || len(n.Pipe.Cmds[0].Args) != 1 {
				return false
			}
			f, ok := n.Pipe.Cmds[0].Args[0].(*parse.FieldNode)
			if !ok || len(f.Ident) != 1 || !contains(fields, f.Ident[0]) {
				return false
			}
		default:
			return false
		}
	}
	return true
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
